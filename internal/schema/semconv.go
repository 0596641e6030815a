package schema

// Semantic-convention attributes promoted to typed columns. Each column takes
// the first key present, so both the current and the older convention name
// are understood. The attribute also stays in its map: promotion copies, it
// never moves, so a query by the OpenTelemetry name keeps working and the
// round trip needs no special case.
var (
	// From resource attributes.
	ServiceNameKeys = []string{"service.name"}
	HostKeys        = []string{"host.name"}
	EnvironmentKeys = []string{"deployment.environment.name", "deployment.environment"}
	RegionKeys      = []string{"cloud.region"}
	// From the record's own attributes.
	HTTPMethodKeys     = []string{"http.request.method", "http.method"}
	HTTPStatusCodeKeys = []string{"http.response.status_code", "http.status_code"}
)
