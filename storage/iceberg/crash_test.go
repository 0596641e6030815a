package iceberg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCrashAtEveryStep stops the committer as a SIGKILL would after each
// of its steps (links made and synced, commit staged, table committed,
// snapshots expired), lets the store go on (a compaction, retention) before a new
// committer starts on the same directory, and checks after every phase
// that the table holds exactly the hive tree's files, each once, every
// one of them readable, and reads back exactly the rows written.
func TestCrashAtEveryStep(t *testing.T) {
	scenario := func(t *testing.T, hook func(string) error) {
		t.Helper()
		e := newEnv(t)
		ctx := context.Background()
		fast := func(c *Config) {
			c.SnapshotRetention, c.KeepSnapshots, c.OrphanAge = time.Nanosecond, 1, time.Nanosecond
		}
		cm := e.committer(hook, fast)
		// run is one phase: a pass, and after a crash a new committer and
		// passes until one completes.
		run := func() {
			t.Helper()
			err := cm.Sync(ctx)
			if err != nil {
				require.ErrorAs(t, err, new(crash))
				cm.Stop()
				cm = e.committer(nil, fast)
				require.NoError(t, cm.Sync(ctx))
			}
		}
		check := func(want []row) {
			t.Helper()
			tbl := e.load("cpu")
			live := livePaths(t, tbl)
			assert.Equal(t, e.hiveFiles("cpu"), suffixes(live), "the table holds the hive tree's files")
			for _, p := range live {
				assert.FileExists(t, localPath(p))
			}
			assert.Equal(t, want, scan(t, tbl))
			assert.Equal(t, e.hiveFiles("cpu"), linkFiles(t, e), "no link left but the live files'")
		}
		h1, h2, h3 := e.hour(3), e.hour(2), e.hour(1)
		a, b, c := rows(h1, 10, 0, "api"), rows(h1, 10, 10, "web"), rows(h2, 10, 20, "api")
		e.write("cpu", h1, "1.parquet", a, false)
		e.write("cpu", h1, "2.parquet", b, false)
		e.write("cpu", h2, "1.parquet", c, false)
		run()
		check(concat(a, b, c))

		// A flush lands, the hour's files are compacted before the
		// committer sees the flush, and a pass follows.
		d := rows(h1, 5, 30, "late")
		e.write("cpu", h1, "3.parquet", d, false)
		run()
		e.write("cpu", h1, "4-compacted.parquet", concat(a, b, d), false)
		e.remove("cpu", h1, "1.parquet", "2.parquet", "3.parquet")
		run()
		check(concat(a, b, c, d))

		// Retention takes the second hour; a new hour arrives.
		require.NoError(t, os.RemoveAll(e.partitionDir("cpu", h2)))
		f := rows(h3, 10, 40, "api")
		e.write("cpu", h3, "1.parquet", f, false)
		run()
		check(concat(a, b, d, f))
	}
	counts := map[string]int{}
	t.Run("no crash", func(t *testing.T) {
		scenario(t, func(s string) error { counts[s]++; return nil })
	})
	require.Equal(t, map[string]int{"linked": 4, "staged": 4, "committed": 4, "expired": 3}, counts)
	for step, n := range counts {
		for i := 1; i <= n; i++ {
			t.Run(fmt.Sprintf("%s#%d", step, i), func(t *testing.T) {
				seen, crashed := 0, false
				scenario(t, func(s string) error {
					if s == step {
						if seen++; seen == i {
							crashed = true
							return errors.New("kill")
						}
					}
					return nil
				})
				assert.True(t, crashed, "the hook ran at %s #%d", step, i)
			})
		}
	}
}

// linkFiles lists a local table's links as date=D/hour=H/name.
func linkFiles(t *testing.T, e *env) []string {
	t.Helper()
	root := filepath.Join(Dir(e.dir), "default", "cpu", dataDirName)
	var out []string
	dates, _ := os.ReadDir(root)
	for _, d := range dates {
		hours, _ := os.ReadDir(filepath.Join(root, d.Name()))
		for _, h := range hours {
			for _, n := range fileNames(t, filepath.Join(root, d.Name(), h.Name())) {
				out = append(out, d.Name()+"/"+h.Name()+"/"+n)
			}
		}
	}
	return out
}
