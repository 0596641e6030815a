package otlparrowtest

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// canonical decodes OTLP/JSON and sorts every key/value list by key: the
// contract keeps every attribute but not their order.
func canonical(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(data, &v))
	return sortKeyValues(v)
}

func sortKeyValues(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = sortKeyValues(e)
		}
	case []any:
		for i, e := range x {
			x[i] = sortKeyValues(e)
		}
		sort.SliceStable(x, func(i, j int) bool { return key(x[i]) < key(x[j]) })
	}
	return v
}

func key(v any) string {
	if m, ok := v.(map[string]any); ok {
		if k, ok := m["key"].(string); ok {
			return k
		}
	}
	return ""
}

// AssertTracesEqual compares field by field, attributes in any order.
func AssertTracesEqual(t testing.TB, want, got ptrace.Traces) {
	t.Helper()
	var m ptrace.JSONMarshaler
	w, err := m.MarshalTraces(want)
	require.NoError(t, err)
	g, err := m.MarshalTraces(got)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, w), canonical(t, g))
}

// AssertLogsEqual compares field by field, attributes in any order.
func AssertLogsEqual(t testing.TB, want, got plog.Logs) {
	t.Helper()
	var m plog.JSONMarshaler
	w, err := m.MarshalLogs(want)
	require.NoError(t, err)
	g, err := m.MarshalLogs(got)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, w), canonical(t, g))
}

// AssertMetricsEqual compares field by field, attributes in any order.
func AssertMetricsEqual(t testing.TB, want, got pmetric.Metrics) {
	t.Helper()
	var m pmetric.JSONMarshaler
	w, err := m.MarshalMetrics(want)
	require.NoError(t, err)
	g, err := m.MarshalMetrics(got)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, w), canonical(t, g))
}
