package iceberg

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// TestStoreFilesInOneTable: the store's own flushed and compacted files of
// the OTLP tables (maps; lists of structs with maps) sit in one Iceberg
// table side by side with one schema, and iceberg-go reads them back whole
// with ToArrowTable (which panicked on the logs table: it reads a required
// map value as nullable against a schema that says it is not).
func TestStoreFilesInOneTable(t *testing.T) {
	ctx := context.Background()
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	at := func(s int) time.Time { return hour.Add(time.Duration(s) * time.Second) }
	for _, tt := range []struct {
		table string
		write func(t *testing.T, s *storage.Store, prefix string, from, n int)
	}{
		{"logs", func(t *testing.T, s *storage.Store, prefix string, from, n int) {
			times := make([]time.Time, n)
			for i := range times {
				times[i] = at(from + i)
			}
			rec, ipc := storagetest.LogBatch(t, prefix, times...)
			defer rec.Release()
			logs, err := storage.LookupTable("logs")
			require.NoError(t, err)
			require.NoError(t, s.Append(ctx, storage.NoDedup, "default", logs, ipc, rec))
		}},
		{"traces", func(t *testing.T, s *storage.Store, prefix string, from, n int) {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", "svc")
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for i := range n {
				var id [16]byte
				binary.BigEndian.PutUint64(id[8:], uint64(from+i+1))
				sp := spans.AppendEmpty()
				sp.SetTraceID(id)
				sp.SetSpanID([8]byte(id[8:]))
				sp.SetName(prefix)
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(from + i)))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at(from + i).Add(time.Millisecond)))
				sp.Attributes().PutStr("http.route", "/x")
				ev := sp.Events().AppendEmpty()
				ev.SetName("retry")
				ev.Attributes().PutInt("attempt", 2)
				l := sp.Links().AppendEmpty()
				l.SetTraceID(id)
				l.Attributes().PutStr("link.kind", "follows")
			}
			conv := otlparrow.NewTracesConverter(memory.DefaultAllocator, 1000)
			defer conv.Release()
			require.NoError(t, conv.Convert(td, func(tbl *schema.Table, rec arrow.RecordBatch) error {
				st, err := storage.LookupTable(tbl.Name)
				if err != nil {
					return err
				}
				return s.Append(ctx, storage.NoDedup, "default", st, storagetest.IPC(t, rec), rec)
			}))
		}},
	} {
		t.Run(tt.table, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			s, err := storage.Open(storage.Options{DataDir: dir, FlushInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			defer s.Close()
			for i := range 3 {
				tt.write(t, s, fmt.Sprint("flush", i), i*100, 100)
				require.NoError(t, s.Flush())
			}
			st, err := s.Compact(ctx, 0)
			require.NoError(t, err)
			require.Equal(t, 1, st.Partitions)
			tt.write(t, s, "late", 1000, 50)
			require.NoError(t, s.Flush())

			e := &env{t: t, dir: dir, now: time.Now()}
			require.NoError(t, e.committer(nil).Sync(ctx))
			tbl := e.load(tt.table)
			live := livePaths(t, tbl)
			require.Len(t, live, 2, "the compacted file and the late flush")
			a, err := fileSchema(localPath(live[0]))
			require.NoError(t, err)
			b, err := fileSchema(localPath(live[1]))
			require.NoError(t, err)
			require.True(t, a.Equal(b), "flushed and compacted files of one table have one schema:\n%s\n%s", a, b)
			whole, err := tbl.Scan().ToArrowTable(ctx)
			require.NoError(t, err)
			defer whole.Release()
			assert.EqualValues(t, 350, whole.NumRows())
		})
	}
}
