package parquetfile

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/parquet-go/parquet-go"
)

// OldWriter is the per-value parquet-go writer this package replaced, kept
// for BenchmarkEncode.
type OldWriter = oldWriter

// NewOldWriter starts a file with the replaced writer.
func NewOldWriter(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options) (*OldWriter, error) {
	return newOldWriter(out, schema, arrowSchema, opts)
}

// SetDeltaLengthStrings makes writers encode undictionaried strings
// DELTA_LENGTH_BYTE_ARRAY instead of PLAIN, for BenchmarkEncode's variant.
func SetDeltaLengthStrings(on bool) {
	stringEncoding = pq.Encodings.Plain
	if on {
		stringEncoding = pq.Encodings.DeltaLengthByteArray
	}
}

// SetZstdLevel sets the zstd level of the files written, for
// BenchmarkEncode's variants.
func SetZstdLevel(level int) { zstdLevel = level }
