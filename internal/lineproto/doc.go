// Package lineproto decodes InfluxDB line protocol, with InfluxData's own
// parser (github.com/influxdata/line-protocol/v2), into the columns the
// Arc MessagePack API decodes to (arcmsgpack.Measurement), so that both
// formats share one path to Arrow, one set of checks and limits, and one
// memory budget per request.
package lineproto
