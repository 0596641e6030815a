package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestArrowSchemaMatchesParquet(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			tbl, _ := Lookup(name)
			fields := tbl.Parquet.Fields()
			if assert.Len(t, tbl.Arrow.Fields(), len(fields)) {
				for i, f := range fields {
					af := tbl.Arrow.Field(i)
					assert.Equal(t, f.Name(), af.Name, "column %d", i)
					assert.Equal(t, f.Optional(), af.Nullable, "nullability of %s", af.Name)
				}
			}
			t.Log(tbl.Parquet.String())
		})
	}
}
