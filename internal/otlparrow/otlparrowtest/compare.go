package otlparrowtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The Assert*Equal functions compare field by field, in order: resources,
// scopes, metrics and records must be grouped alike. Strings compare byte
// for byte (the generator's ReadBack mode already holds U+FFFD where the
// contract replaces invalid UTF-8); attribute maps compare through AsRaw in
// any key order; doubles compare by value, NaN equal to NaN and -0 unequal
// to +0. A failure lists every differing field by path. A final comparison
// of the canonical OTLP/JSON catches a field the walk does not know.

// AssertTracesEqual compares want and got field by field.
func AssertTracesEqual(t testing.TB, want, got ptrace.Traces) {
	t.Helper()
	d := &differ{}
	d.traces(want, got)
	if d.report(t) {
		assertSameJSON(t, want, got, (&ptrace.JSONMarshaler{}).MarshalTraces)
	}
}

// AssertLogsEqual compares want and got field by field.
func AssertLogsEqual(t testing.TB, want, got plog.Logs) {
	t.Helper()
	d := &differ{}
	d.logs(want, got)
	if d.report(t) {
		assertSameJSON(t, want, got, (&plog.JSONMarshaler{}).MarshalLogs)
	}
}

// AssertMetricsEqual compares want and got field by field.
func AssertMetricsEqual(t testing.TB, want, got pmetric.Metrics) {
	t.Helper()
	d := &differ{}
	d.metrics(want, got)
	if d.report(t) {
		assertSameJSON(t, want, got, (&pmetric.JSONMarshaler{}).MarshalMetrics)
	}
}

func assertSameJSON[T any](t testing.TB, want, got T, marshal func(T) ([]byte, error)) {
	t.Helper()
	w, err := marshal(want)
	require.NoError(t, err)
	g, err := marshal(got)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, w), canonical(t, g), "canonical OTLP/JSON")
}

// differ collects the differences found, each with its path.
type differ struct{ diffs []string }

func (d *differ) addf(path, format string, args ...any) {
	d.diffs = append(d.diffs, path+": "+fmt.Sprintf(format, args...))
}

// report fails t with the differences and tells whether there were none.
func (d *differ) report(t testing.TB) bool {
	t.Helper()
	if len(d.diffs) == 0 {
		return true
	}
	const show = 40
	msg := strings.Join(d.diffs[:min(show, len(d.diffs))], "\n")
	if len(d.diffs) > show {
		msg += fmt.Sprintf("\n... and %d more", len(d.diffs)-show)
	}
	t.Errorf("%d differences (want vs got):\n%s", len(d.diffs), msg)
	return false
}

// brief shortens a value for a message: a 1 MiB string is a valid value.
func brief(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 120 {
		s = s[:120] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

func check[T comparable](d *differ, path string, want, got T) {
	if want != got {
		d.addf(path, "%s vs %s", brief(want), brief(got))
	}
}

func sameFloat(a, b float64) bool {
	return (math.IsNaN(a) && math.IsNaN(b)) || math.Float64bits(a) == math.Float64bits(b)
}

func (d *differ) float(path string, want, got float64) {
	if !sameFloat(want, got) {
		d.addf(path, "%v vs %v", want, got)
	}
}

// length checks the lengths of two lists and returns the shorter, so the
// caller compares what both have.
func (d *differ) length(path string, want, got int) int {
	check(d, path+".len", want, got)
	return min(want, got)
}

func (d *differ) attrs(path string, want, got pcommon.Map) {
	d.raw(path, want.AsRaw(), got.AsRaw())
}

func (d *differ) value(path string, want, got pcommon.Value) {
	check(d, path+".type", want.Type(), got.Type())
	d.raw(path, want.AsRaw(), got.AsRaw())
}

// raw compares what AsRaw returns: maps in any order, NaN-aware.
func (d *differ) raw(path string, want, got any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			d.addf(path, "map vs %T", got)
			return
		}
		for _, k := range sortedKeys(w, g) {
			wv, inW := w[k]
			gv, inG := g[k]
			if inW != inG {
				d.addf(path+"["+brief(k)+"]", "present %t vs %t", inW, inG)
				continue
			}
			d.raw(path+"["+brief(k)+"]", wv, gv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			d.addf(path, "array vs %T", got)
			return
		}
		for i := range d.length(path, len(w), len(g)) {
			d.raw(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	case float64:
		if g, ok := got.(float64); !ok || !sameFloat(w, g) {
			d.addf(path, "%v vs %s", w, brief(got))
		}
	case []byte:
		if g, ok := got.([]byte); !ok || !bytes.Equal(w, g) {
			d.addf(path, "%x vs %s", w, brief(got))
		}
	default:
		if reflect.TypeOf(want) != reflect.TypeOf(got) || want != got {
			d.addf(path, "%s vs %s", brief(want), brief(got))
		}
	}
}

func sortedKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func (d *differ) resource(path string, want, got pcommon.Resource) {
	d.attrs(path+".attributes", want.Attributes(), got.Attributes())
	check(d, path+".droppedAttributesCount", want.DroppedAttributesCount(), got.DroppedAttributesCount())
}

func (d *differ) scope(path string, want, got pcommon.InstrumentationScope) {
	check(d, path+".name", want.Name(), got.Name())
	check(d, path+".version", want.Version(), got.Version())
	d.attrs(path+".attributes", want.Attributes(), got.Attributes())
	check(d, path+".droppedAttributesCount", want.DroppedAttributesCount(), got.DroppedAttributesCount())
}

// canonical decodes OTLP/JSON, numbers as written (so -0 stays -0), and
// sorts every key/value list by key: the contract keeps every attribute but
// not their order.
func canonical(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
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
