package otlparrow

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestParseIntMatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"0", "200", "+7", "-7", "007", "", "+", "-", "1_000", "0x10", " 1", "1 ", "1.0", "1e3",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551616", "99999999999999999999",
	} {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			want, err := strconv.ParseInt(s, 10, 64)
			got, ok := parseInt([]byte(s))
			assert.Equal(t, err == nil, ok)
			if ok {
				assert.Equal(t, want, got)
			}
		})
	}
	n, ok := parseInt([]byte("-9223372036854775808"))
	assert.True(t, ok)
	assert.Equal(t, int64(math.MinInt64), n)
}

// Hash collisions are too rare to produce with real keys: this runs the
// check on a run of entries that all share a hash.
func TestMarkDuplicatesWithinAHashRun(t *testing.T) {
	m := pcommon.NewMap()
	for _, k := range []string{"a", "b", "a2", "c"} {
		m.PutStr(k, k)
	}
	var r rendered
	r.reset(m)
	r.entries[2].key = r.entries[0].key // make "a2" a duplicate of "a"
	run := []keyHash{{7, 0}, {7, 1}, {7, 2}, {7, 3}}
	assert.True(t, r.markDuplicates(run))
	var kept []string
	for _, e := range r.entries {
		if e.key.start >= 0 {
			kept = append(kept, string(r.bytes(e.key)))
		}
	}
	assert.Equal(t, []string{"a", "b", "c"}, kept)
}

func TestDropDuplicateKeys(t *testing.T) {
	// Each group adds three keys; the last two are equal once invalid UTF-8
	// is replaced, and the first of them must win.
	for _, groups := range []int{1, smallSet / 3, smallSet/3 + 1, 40} {
		t.Run(fmt.Sprint(3*groups, " keys"), func(t *testing.T) {
			m := pcommon.NewMap()
			want := map[string]string{}
			for g := range groups {
				m.PutStr(fmt.Sprintf("key.%d", g), "unique")
				m.PutStr(fmt.Sprintf("dup.%d\xfe", g), "first")
				m.PutStr(fmt.Sprintf("dup.%d\xff", g), "second")
				want[fmt.Sprintf("key.%d", g)] = "unique"
				want[fmt.Sprintf("dup.%d\uFFFD", g)] = "first"
			}
			var r rendered
			r.reset(m)
			got := map[string]string{}
			for _, e := range r.entries {
				k := string(r.bytes(e.key))
				assert.NotContains(t, got, k, "duplicate key")
				got[k] = string(r.bytes(e.text))
			}
			assert.Equal(t, want, got)
		})
	}
}
