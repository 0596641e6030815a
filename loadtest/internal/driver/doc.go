// Package driver produces the load of a run: a pre-generating OTLP/gRPC
// sender (requests marshalled once, ids patched in per send, so the sender
// costs little CPU beside the system under test), a telemetrygen runner,
// and an Arc MessagePack sender whose distinct batches are generated before
// the clock starts.
package driver
