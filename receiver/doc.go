// Package receiver is the sidecar's front door: the Arrow Flight DoPut
// service the exporter writes to, and the HTTP endpoints for health and
// readiness. It validates every batch before storage sees it and answers
// with a status a client can act on.
package receiver
