// Package stack starts and watches the processes of a load run: the
// arcstore sidecar and the otelcol-arc collector, the latter exporting to
// the sidecar or, for the ceiling, to the nop exporter.
package stack
