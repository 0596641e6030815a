// Package driver produces the load of a run: a pre-generating OTLP/gRPC
// sender (requests marshalled once, ids patched in per send, so the sender
// costs little CPU beside the system under test) and a telemetrygen runner.
package driver
