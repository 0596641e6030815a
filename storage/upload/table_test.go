package upload

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// fakeTable records what it is asked to settle and fails while down.
type fakeTable struct {
	mu    sync.Mutex
	down  bool
	calls []settleCall
	// objects are what the bucket held at each call, to check the order.
	objects func() []string
}

type settleCall struct {
	partition  string
	live, gone []string
	bucket     []string
}

func (f *fakeTable) Settle(_ context.Context, partition string, live, gone []StoredFile) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := func(fs []StoredFile) []string {
		var out []string
		for _, s := range fs {
			out = append(out, s.Key)
		}
		return out
	}
	f.calls = append(f.calls, settleCall{partition: partition, live: keys(live), gone: keys(gone), bucket: f.objects()})
	if f.down {
		return errors.New("catalog unreachable")
	}
	return nil
}

// TestTableSettledBeforeDeletes: the uploader asks the table to swap a
// replaced object for its replacement before it deletes the object, and to
// hold a partition's objects before it deletes the partition locally; while
// the table cannot, the object and the partition stay and the pass goes on.
func TestTableSettledBeforeDeletes(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	tbl := &fakeTable{objects: e.objects}
	p := e.partition(3)
	e.write(p, "1.parquet", parquetFile(t, row{Time: 1, V: "a"}))
	u := e.uploader(nil, func(c *Config) { c.Table = tbl })
	drain(t, u)
	assert.Empty(t, tbl.calls, "nothing deleted, nothing to settle")

	// A compaction replaces the file; the table is down.
	e.write(p, "2.parquet", parquetFile(t, row{Time: 1, V: "a"}, row{Time: 2, V: "b"}))
	e.remove(p, "1.parquet")
	tbl.down = true
	_, err := u.pass(context.Background())
	require.NoError(t, err, "a table that is behind holds the partition, not the pass")
	assert.Equal(t, []string{e.key(p, "1.parquet"), e.key(p, "2.parquet")}, e.objects(), "the replaced object stays while the table still lists it")
	require.Len(t, tbl.calls, 1)
	assert.Equal(t, settleCall{partition: p, live: []string{e.key(p, "2.parquet")}, gone: []string{e.key(p, "1.parquet")},
		bucket: []string{e.key(p, "1.parquet"), e.key(p, "2.parquet")}}, tbl.calls[0])

	tbl.down = false
	drain(t, u)
	assert.Equal(t, []string{e.key(p, "2.parquet")}, e.objects())
	require.Len(t, tbl.calls, 2)
	assert.Equal(t, []string{e.key(p, "1.parquet"), e.key(p, "2.parquet")}, tbl.calls[1].bucket, "settled before the delete")

	// Local retention: the table must hold the objects before the local
	// partition (and with it the manifest) goes.
	tbl.down = true
	u.cfg.LocalRetention = time.Hour
	_, err = u.pass(context.Background())
	require.NoError(t, err)
	assert.True(t, e.exists(p), "kept while the table is behind")
	require.Len(t, tbl.calls, 3)
	assert.Equal(t, settleCall{partition: p, live: []string{e.key(p, "2.parquet")}, bucket: []string{e.key(p, "2.parquet")}}, tbl.calls[2])
	tbl.down = false
	drain(t, u)
	assert.False(t, e.exists(p))
	assert.Equal(t, []string{e.key(p, "2.parquet")}, e.objects())
}
