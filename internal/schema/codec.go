package schema

import (
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// ParquetCompressed is s with codec on every column. The schema of a file
// parquet-go opened carries the file's codec on each column, which a
// parquet-go writer takes over the one it is given: compaction, which
// rewrites files with their own schemas, sets its codec with this.
// Column order, repetition and encodings stay s's.
func ParquetCompressed(s *parquet.Schema, codec compress.Codec) *parquet.Schema {
	return parquet.NewSchema(s.Name(), nodeCompressed(s, codec))
}

func nodeCompressed(n parquet.Node, codec compress.Codec) parquet.Node {
	if n.Leaf() {
		return parquet.Compressed(n, codec)
	}
	fields := n.Fields()
	out := make([]parquet.Field, len(fields))
	for i, f := range fields {
		out[i] = &field{Node: nodeCompressed(f, codec), of: f}
	}
	return &group{Node: n, fields: out}
}
