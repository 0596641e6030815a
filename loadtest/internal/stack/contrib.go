package stack

import (
	"fmt"
	"strings"
)

// ContribExporter is the component name of the contrib ClickHouse
// exporter, as its metrics label it.
const ContribExporter = "clickhouse"

// ContribTable is where the contrib exporter writes one of our tables'
// items, and the map column that holds their attributes.
type ContribTable struct {
	Table      string
	Attributes string
}

// ContribTables are the contrib exporter's tables for our traces, logs and
// metrics (the load's metrics are gauges); contribExporter names them in
// its config, and the loss check counts there.
var ContribTables = map[string]ContribTable{
	"traces":  {Table: "otel_traces", Attributes: "SpanAttributes"},
	"logs":    {Table: "otel_logs", Attributes: "LogAttributes"},
	"metrics": {Table: "otel_metrics_gauge", Attributes: "Attributes"},
}

// contribExporter is the clickhouseexporter's config as its README
// recommends for throughput: batching inside the sending queue (5 000-row
// INSERTs, no batch processor), 10 consumers, async inserts and lz4 (its
// defaults), the tables created by the exporter. The queue blocks when
// full (block_on_overflow, items) like ours, so saturation shows as latency
// at the sender instead of dropped data; its size is -queue-size, as ours.
func contribExporter(o Options) string {
	db := o.ClickHouseDatabase
	if db == "" {
		db = "otel"
	}
	queueYAML := fmt.Sprintf("sending_queue: {enabled: true, num_consumers: 10, sizer: items, queue_size: %d, block_on_overflow: true, batch: {min_size: 5000, flush_timeout: 5s}}", queueSize(o))
	if strings.Contains(o.ExporterExtra, "sending_queue:") {
		queueYAML = ""
	}
	return fmt.Sprintf(`%s:
    endpoint: %q
    database: %q
    create_schema: true
    async_insert: true
    compress: lz4
    traces_table_name: %s
    logs_table_name: %s
    metrics_tables: {gauge: {name: %s}}
    %s
    %s`, ContribExporter, "tcp://"+o.ClickHouseAddr, db,
		ContribTables["traces"].Table, ContribTables["logs"].Table, ContribTables["metrics"].Table,
		queueYAML, o.ExporterExtra)
}
