package schema

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// appendJSONString replaced json.Marshal; stored type tags and bodies must
// not change because of it.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	cases := map[string]string{
		"empty":            "",
		"plain":            "hello world",
		"quotes and slash": `a"b\c/d`,
		"control bytes":    "\x00\x01\b\f\n\r\t\x1f\x7f",
		"html":             "<a href='x'>&amp;</a>",
		"unicode":          "ünïcødé ✓ 日本",
		"line separators":  "a\u2028b\u2029c",
		"invalid utf-8":    "bad\xff\xfeok\xc3",
		"valid U+FFFD":     "\uFFFD",
		"truncated rune":   "\xe2\x82",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		b := make([]byte, rng.IntN(24))
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		cases["random "+string(rune('a'+i%26))+string(rune('0'+i/26))] = string(b)
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(string(AppendValidUTF8(nil, s)))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(appendJSONString(nil, s)))
		})
	}
}

func TestAppendOTLPJSONDoesNotAllocate(t *testing.T) {
	v := pcommon.NewValueMap()
	m := v.Map()
	m.PutStr("k<&>", "v\xff\n")
	m.PutDouble("nan", math.NaN())
	s := m.PutEmptySlice("s")
	s.AppendEmpty().SetStr("x")
	s.AppendEmpty().SetEmptyBytes().FromRaw([]byte{1, 2})
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendOTLPJSON(buf[:0], v)
		buf = AppendText(buf, v)
	})
	assert.Zero(t, allocs)

	var round pcommon.Value = pcommon.NewValueEmpty()
	require.NoError(t, ParseOTLPJSON(string(AppendOTLPJSON(nil, v)), round))
	assert.Equal(t, "v\uFFFD\n", round.Map().AsRaw()["k<&>"])
}

func TestAppendBase64AcrossChunks(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 383, 384, 385, 1000} {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(i * 7)
		}
		bs := pcommon.NewByteSlice()
		bs.FromRaw(raw)
		assert.Equal(t, base64.StdEncoding.EncodeToString(raw), string(appendBase64(nil, bs)), "%d bytes", n)
	}
}
