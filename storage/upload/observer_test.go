package upload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
)

type recorder struct{ events []string }

func (r *recorder) Committed(storage.Commit)       { r.events = append(r.events, "committed") }
func (r *recorder) Flushed(storage.Flush)          { r.events = append(r.events, "flushed") }
func (r *recorder) Compacted(storage.CompactStats) { r.events = append(r.events, "compacted") }
func (r *recorder) Retired(int)                    { r.events = append(r.events, "retired") }
func (r *recorder) SinkWrote(storage.SinkWritten)  { r.events = append(r.events, "sink") }
func (r *recorder) Deduplicated(storage.Duplicate) { r.events = append(r.events, "deduplicated") }

// TestObserverPassesEverything: the sidecar's metrics still see every
// event, and only a compaction run that succeeded moves the uploader's
// cutoff forward.
func TestObserverPassesEverything(t *testing.T) {
	u, err := New(Config{Bucket: &refusing{}})
	require.NoError(t, err)
	next := &recorder{}
	o := u.Observe(next)
	cut := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	o.Committed(storage.Commit{})
	o.Flushed(storage.Flush{})
	o.Compacted(storage.CompactStats{Cutoff: cut})
	o.Compacted(storage.CompactStats{Cutoff: cut.Add(time.Hour), Err: assert.AnError})
	o.Compacted(storage.CompactStats{Cutoff: cut.Add(-time.Hour)})
	o.Retired(1)
	o.SinkWrote(storage.SinkWritten{})
	o.Deduplicated(storage.Duplicate{})
	assert.Equal(t, []string{"committed", "flushed", "compacted", "compacted", "compacted", "retired", "sink", "deduplicated"}, next.events)
	assert.Equal(t, cut, u.compactedThrough, "a failed run and an older cutoff leave it")
	assert.Len(t, u.wake, 1, "a compaction run starts a scan")

	nop := u.Observe(nil) // no metrics: nothing to pass on
	nop.Flushed(storage.Flush{})
	nop.Deduplicated(storage.Duplicate{})
	nop.Compacted(storage.CompactStats{Cutoff: cut.Add(time.Hour)})
	assert.Equal(t, cut.Add(time.Hour), u.compactedThrough)
}

func TestKey(t *testing.T) {
	for prefix, want := range map[string]string{
		"":      "db/t/date=2026-01-02/hour=3/f.parquet",
		"otel":  "otel/db/t/date=2026-01-02/hour=3/f.parquet",
		"/a/b/": "a/b/db/t/date=2026-01-02/hour=3/f.parquet",
	} {
		assert.Equal(t, want, Key(prefix, "db/t/date=2026-01-02/hour=3", "f.parquet"), prefix)
	}
}
