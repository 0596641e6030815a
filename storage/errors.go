package storage

import "errors"

// Errors Append returns that a client should retry.
var (
	ErrBackpressure = errors.New("sidecar buffer is full; retry later")
	ErrClosed       = errors.New("sidecar is shutting down")
)
