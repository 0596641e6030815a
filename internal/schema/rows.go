package schema

// The row types below are the single definition of every table. Field order
// is column order. Tags follow parquet-go's syntax; arrow.go derives the
// Arrow schema from the same fields, so the wire format and the file format
// cannot drift apart.
//
// Conventions (docs/SCHEMA.md explains each):
//   - Timestamps are INT64 TIMESTAMP(MICROS, UTC) (time.go).
//   - Trace and span ids are lowercase hex strings; "" when absent.
//   - Unsigned OTLP integers (flags, dropped counts, histogram counts) are
//     stored as signed INT64, which holds every uint32 and every uint64 below
//     2^63; engines without unsigned types read them as is.
//   - Pointer fields are nullable columns: absent is not the same as zero.
//   - Each attribute set is two maps: <set> holds every key with its value
//     rendered as text, and <set>_types holds a type tag for the keys whose
//     value is not a string (see attributes.go). The first answers
//     attributes['http.route']; both together restore the exact OTLP value.

// Resource is the resource and scope part shared by every row.
type Resource struct {
	ServiceName                    string            `parquet:"service_name,dict"`
	Host                           *string           `parquet:"host,optional,dict"`
	Environment                    *string           `parquet:"environment,optional,dict"`
	Region                         *string           `parquet:"region,optional,dict"`
	ResourceAttributes             map[string]string `parquet:"resource_attributes"`
	ResourceAttributeTypes         map[string]string `parquet:"resource_attribute_types"`
	ResourceDroppedAttributesCount int64             `parquet:"resource_dropped_attributes_count"`
	ResourceSchemaURL              string            `parquet:"resource_schema_url,dict"`
	ScopeName                      string            `parquet:"scope_name,dict"`
	ScopeVersion                   string            `parquet:"scope_version,dict"`
	ScopeAttributes                map[string]string `parquet:"scope_attributes"`
	ScopeAttributeTypes            map[string]string `parquet:"scope_attribute_types"`
	ScopeDroppedAttributesCount    int64             `parquet:"scope_dropped_attributes_count"`
	ScopeSchemaURL                 string            `parquet:"scope_schema_url,dict"`
}

// Span is one row of the traces table.
type Span struct {
	Time              int64   `parquet:"time,timestamp(microsecond),delta"`
	EndTime           int64   `parquet:"end_time,timestamp(microsecond),delta"`
	DurationNs        int64   `parquet:"duration_ns"`
	TraceID           string  `parquet:"trace_id"`
	SpanID            string  `parquet:"span_id"`
	ParentSpanID      string  `parquet:"parent_span_id"`
	TraceState        string  `parquet:"trace_state,dict"`
	Flags             int64   `parquet:"flags"`
	OperationName     string  `parquet:"operation_name,dict"`
	SpanKind          string  `parquet:"span_kind,dict"`
	SpanStatus        string  `parquet:"span_status,dict"`
	SpanStatusMessage string  `parquet:"span_status_message,dict"`
	Error             bool    `parquet:"error"`
	HTTPMethod        *string `parquet:"http_method,optional,dict"`
	StatusCode        *int64  `parquet:"status_code,optional"`
	Resource
	Attributes             map[string]string `parquet:"attributes"`
	AttributeTypes         map[string]string `parquet:"attribute_types"`
	DroppedAttributesCount int64             `parquet:"dropped_attributes_count"`
	Events                 []SpanEvent       `parquet:"events,list"`
	DroppedEventsCount     int64             `parquet:"dropped_events_count"`
	Links                  []SpanLink        `parquet:"links,list"`
	DroppedLinksCount      int64             `parquet:"dropped_links_count"`
}

// SpanEvent is one element of a span's events list.
type SpanEvent struct {
	Time                   int64             `parquet:"time,timestamp(microsecond)"`
	Name                   string            `parquet:"name,dict"`
	Attributes             map[string]string `parquet:"attributes"`
	AttributeTypes         map[string]string `parquet:"attribute_types"`
	DroppedAttributesCount int64             `parquet:"dropped_attributes_count"`
}

// SpanLink is one element of a span's links list.
type SpanLink struct {
	TraceID                string            `parquet:"trace_id"`
	SpanID                 string            `parquet:"span_id"`
	TraceState             string            `parquet:"trace_state"`
	Flags                  int64             `parquet:"flags"`
	Attributes             map[string]string `parquet:"attributes"`
	AttributeTypes         map[string]string `parquet:"attribute_types"`
	DroppedAttributesCount int64             `parquet:"dropped_attributes_count"`
}

// LogRecord is one row of the logs table and of the events table. Events are
// log records that carry an event name; event_type holds it ("" in logs).
type LogRecord struct {
	Time           int64   `parquet:"time,timestamp(microsecond),delta"`
	ObservedTime   int64   `parquet:"observed_time,timestamp(microsecond),delta"`
	TraceID        string  `parquet:"trace_id"`
	SpanID         string  `parquet:"span_id"`
	Flags          int64   `parquet:"flags"`
	SeverityNumber int64   `parquet:"severity_number"`
	SeverityText   string  `parquet:"severity_text,dict"`
	Level          string  `parquet:"level,dict"`
	EventType      string  `parquet:"event_type,dict"`
	Message        string  `parquet:"message"`
	BodyType       string  `parquet:"body_type,dict"`
	BodyJSON       *string `parquet:"body_json,optional"`
	HTTPMethod     *string `parquet:"http_method,optional,dict"`
	StatusCode     *int64  `parquet:"status_code,optional"`
	Resource
	Attributes             map[string]string `parquet:"attributes"`
	AttributeTypes         map[string]string `parquet:"attribute_types"`
	DroppedAttributesCount int64             `parquet:"dropped_attributes_count"`
}

// MetricPoint is one row of the metrics table: one data point of any of the
// five OTLP metric types. Columns that a type does not use are null (or an
// empty list).
type MetricPoint struct {
	Time                 int64             `parquet:"time,timestamp(microsecond),delta"`
	StartTime            int64             `parquet:"start_time,timestamp(microsecond),delta"`
	MetricName           string            `parquet:"metric_name,dict"`
	MetricDescription    string            `parquet:"metric_description,dict"`
	MetricUnit           string            `parquet:"metric_unit,dict"`
	MetricType           string            `parquet:"metric_type,dict"`
	Temporality          string            `parquet:"temporality,dict"`
	IsMonotonic          bool              `parquet:"is_monotonic"`
	Value                *float64          `parquet:"value,optional"`
	ValueInt             *int64            `parquet:"value_int,optional"`
	Count                *int64            `parquet:"count,optional"`
	Sum                  *float64          `parquet:"sum,optional"`
	Min                  *float64          `parquet:"min,optional"`
	Max                  *float64          `parquet:"max,optional"`
	BucketCounts         []int64           `parquet:"bucket_counts,list"`
	ExplicitBounds       []float64         `parquet:"explicit_bounds,list"`
	Scale                *int64            `parquet:"scale,optional"`
	ZeroCount            *int64            `parquet:"zero_count,optional"`
	ZeroThreshold        *float64          `parquet:"zero_threshold,optional"`
	PositiveOffset       *int64            `parquet:"positive_offset,optional"`
	PositiveBucketCounts []int64           `parquet:"positive_bucket_counts,list"`
	NegativeOffset       *int64            `parquet:"negative_offset,optional"`
	NegativeBucketCounts []int64           `parquet:"negative_bucket_counts,list"`
	QuantileLevels       []float64         `parquet:"quantile_levels,list"`
	QuantileValues       []float64         `parquet:"quantile_values,list"`
	Flags                int64             `parquet:"flags"`
	Exemplars            []Exemplar        `parquet:"exemplars,list"`
	MetricMetadata       map[string]string `parquet:"metric_metadata"`
	MetricMetadataTypes  map[string]string `parquet:"metric_metadata_types"`
	Resource
	Attributes     map[string]string `parquet:"attributes"`
	AttributeTypes map[string]string `parquet:"attribute_types"`
}

// Exemplar is one element of a data point's exemplars list.
type Exemplar struct {
	Time                   int64             `parquet:"time,timestamp(microsecond)"`
	Value                  *float64          `parquet:"value,optional"`
	ValueInt               *int64            `parquet:"value_int,optional"`
	TraceID                string            `parquet:"trace_id"`
	SpanID                 string            `parquet:"span_id"`
	FilteredAttributes     map[string]string `parquet:"filtered_attributes"`
	FilteredAttributeTypes map[string]string `parquet:"filtered_attribute_types"`
}
