package otlparrow

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Rendering a record's attributes straight into the columns must give the
// rows the rendered arena gives, also when a row has duplicate keys (taken
// back and rendered again) between rows that have none.
func TestAppendAttrsMatchesRendered(t *testing.T) {
	maps := map[string]func(pcommon.Map){
		"empty": func(pcommon.Map) {},
		"strings": func(m pcommon.Map) {
			m.PutStr("http.request.method", "GET")
			m.PutStr("url.path", "/a\xffb")
		},
		"every type": func(m pcommon.Map) {
			m.PutInt("i", -42)
			m.PutDouble("d", 0.1)
			m.PutBool("b", true)
			m.PutEmptyBytes("raw").FromRaw([]byte{0xff, 0})
			m.PutEmptySlice("s").AppendEmpty().SetStr("x")
			m.PutEmptyMap("m").PutInt("n", 1)
			m.PutEmpty("nil")
		},
		"duplicates after UTF-8 repair": func(m pcommon.Map) {
			m.PutInt("k\xfe", 1)
			m.PutStr("a", "b")
			m.PutInt("k\xff", 2)
		},
	}
	for _, n := range []int{smallSet, 40} {
		maps[fmt.Sprint(n, " unique keys")] = func(m pcommon.Map) {
			for i := range n {
				m.PutInt(fmt.Sprint("key.", i), int64(i))
			}
		}
		maps[fmt.Sprint(n, " keys, the last two equal after UTF-8 repair")] = func(m pcommon.Map) {
			for i := range n - 2 {
				m.PutStr(fmt.Sprint("key.", i), "v")
			}
			m.PutInt("dup\xfe", 1)
			m.PutInt("dup\xff", 2)
		}
	}
	for name, fill := range maps {
		t.Run(name, func(t *testing.T) {
			m := pcommon.NewMap()
			fill(m)
			plain := pcommon.NewMap()
			plain.PutStr("before", "and after")
			var direct, arena converter
			gotCols, wantCols := attrCols{newMapCol(), newMapCol()}, attrCols{newMapCol(), newMapCol()}
			for _, row := range []pcommon.Map{plain, m, plain} {
				direct.appendAttrs(row, gotCols)
				arena.rec.reset(row)
				arena.rec.appendTo(wantCols)
			}
			mt := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
			mt.SetItemNullable(false)
			for i, pair := range [][2]*mapCol{{gotCols.text, wantCols.text}, {gotCols.types, wantCols.types}} {
				got, want := pair[0].newArray(mt), pair[1].newArray(mt)
				assert.True(t, array.Equal(want, got), "map %d: got %v, want %v", i, got, want)
				got.Release()
				want.Release()
			}
		})
	}
}
