// Package e2e holds the end-to-end tests: they start the real arcstore and
// otelcol-arc binaries on loopback, send telemetry with telemetrygen, the
// OpenTelemetry Go SDK and a raw OTLP client, and read the Parquet back with
// DuckDB. `make test` builds the binaries first; run alone, the tests look
// for them in ../../bin.
package e2e
