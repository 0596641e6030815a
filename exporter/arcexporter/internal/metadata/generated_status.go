// Code generated from metadata.yaml in the layout of mdatagen v0.162.0,
// which the module proxy of our build machines does not serve; regenerate
// with `make generate` where it is available.

// Package metadata contains the build information for the exporter/arc
// component.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

var (
	Type      = component.MustNewType("arc")
	ScopeName = "github.com/arc-otel/arc-otel/exporter/arcexporter"
)

const (
	TracesStability  = component.StabilityLevelAlpha
	MetricsStability = component.StabilityLevelAlpha
	LogsStability    = component.StabilityLevelAlpha
)
