package main

import (
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/receiver"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/clickhouse"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"config without address", []string{"-clickhouse-config", "ch.yaml"}, "-clickhouse-config needs -clickhouse-addr"},
		{"no storage at all", []string{"-parquet=false"}, "-parquet=false needs -clickhouse-addr"},
		{"buffer over half the memory limit", []string{"-max-buffer-bytes", "300000000", "-memory-limit", "400000000"}, "over half of -memory-limit"},
		{"tls half", []string{"-tls-cert-file", "c.pem"}, "go together"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	c, err := parseFlags([]string{"-clickhouse-addr", "ch:9000", "-parquet=false", "-max-wal-bytes", "1000", "-wal-repair", "-dedup-window", "2h"})
	require.NoError(t, err)
	assert.True(t, c.walRepair)
	assert.Equal(t, 2*time.Hour, c.dedupWindow)
	assert.Equal(t, "ch:9000", c.clickhouseAddr)
	assert.False(t, c.parquet)
	assert.EqualValues(t, 1000, c.maxWALBytes)

	c, err = parseFlags([]string{"-max-columns", "64", "-max-string-bytes", "4096", "-max-partitions-per-request", "24"})
	require.NoError(t, err)
	assert.Equal(t, storage.Limits{MaxColumns: 64, MaxStringBytes: 4096, MaxPartitionsPerRequest: 24}, c.limits)
	c, err = parseFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, storage.Limits{MaxColumns: storage.DefaultMaxColumns, MaxStringBytes: storage.DefaultMaxStringBytes,
		MaxPartitionsPerRequest: storage.DefaultMaxPartitionsPerRequest}, c.limits)
}

func TestClickHouseConfigFile(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv(clickhouseEnvPassword, "")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	pw := write("pw", "s3cret\n")
	tests := []struct {
		name, yaml, want string
		check            func(t *testing.T, cfg clickhouse.Config)
	}{
		{"every setting", "database: otel\nuser: arc\npassword_file: " + pw + "\ncluster: c1\nttl: INTERVAL 30 DAY\ndedup_window: 500\ncompression: true\ntls: {enabled: true, server_name: ch.example}\n", "",
			func(t *testing.T, cfg clickhouse.Config) {
				assert.Equal(t, "otel", cfg.Database)
				assert.Equal(t, "arc", cfg.User)
				assert.Equal(t, "s3cret", cfg.Password, "read from password_file, trimmed")
				assert.Equal(t, "c1", cfg.Cluster)
				assert.Equal(t, "INTERVAL 30 DAY", cfg.TTL)
				assert.Equal(t, 500, cfg.DedupWindow)
				assert.True(t, cfg.Compression)
				require.NotNil(t, cfg.TLS)
				assert.Equal(t, "ch.example", cfg.TLS.ServerName)
			}},
		{"empty file", "", "", func(t *testing.T, cfg clickhouse.Config) {
			assert.Empty(t, cfg.User)
			assert.Nil(t, cfg.TLS, "no TLS unless enabled")
		}},
		{"unknown key", "usr: arc\n", "field usr not found", nil},
		{"missing password file", "password_file: /nonexistent\n", "read clickhouse password_file", nil},
		{"half a client certificate", "tls: {enabled: true, cert_file: c.pem}\n", "cert_file and key_file go together", nil},
		{"bad ca file", "tls: {enabled: true, ca_file: " + pw + "}\n", "no PEM certificate", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config{clickhouseAddr: "127.0.0.1:9000", clickhouseConfig: write("ch.yaml", tt.yaml)}
			s, err := clickhouseSink(c, quiet)
			if tt.want != "" {
				assert.ErrorContains(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, s)
			tt.check(t, s.Config())
			assert.NoError(t, s.Close())
		})
	}
	s, err := clickhouseSink(config{}, quiet)
	require.NoError(t, err)
	assert.Nil(t, s, "no address, no sink")

	t.Setenv(clickhouseEnvPassword, "from-env")
	s, err = clickhouseSink(config{clickhouseAddr: "127.0.0.1:9000", clickhouseConfig: write("ch.yaml", "password: in-file\n")}, quiet)
	require.NoError(t, err)
	assert.Equal(t, "from-env", s.Config().Password, "the environment overrides the file")
}

func TestFlagSizes(t *testing.T) {
	tests := []struct {
		value string
		want  int64
	}{
		{"33554432", 32 << 20},
		{"32MiB", 32 << 20},
		{"32 MiB", 32 << 20},
		{"32mib", 32 << 20},
		{"128MiB", 128 << 20},
		{"4GiB", 4 << 30},
		{"1.5KiB", 1536},
		{"64KiB", 64 << 10},
		{"2KB", 2000},
		{"32MB", 32_000_000},
		{"1GB", 1_000_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c, err := parseFlags([]string{"-flush-bytes", tt.value, "-max-wal-bytes", tt.value, "-max-body-bytes", tt.value, "-max-decoded-bytes", tt.value})
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.flushBytes)
			assert.Equal(t, tt.want, c.maxWALBytes)
			assert.Equal(t, tt.want, c.maxBody)
			assert.Equal(t, tt.want, c.maxDecoded)
			back := byteSize(tt.want)
			var again byteSize
			require.NoError(t, again.Set(back.String()), "String parses back")
			assert.Equal(t, back, again)
		})
	}
	c, err := parseFlags([]string{"-max-buffer-bytes", "64MiB", "-memory-limit", "1GiB", "-flush-workers", "1"})
	require.NoError(t, err)
	assert.Equal(t, 1, c.flushWorkers)
	assert.EqualValues(t, 64<<20, c.maxBufferBytes)
	assert.EqualValues(t, 1<<30, c.memoryLimit)

	c, err = parseFlags(nil)
	require.NoError(t, err)
	assert.EqualValues(t, storage.DefaultFlushBytes, c.flushBytes, "defaults are unchanged")
	assert.Equal(t, 2, c.flushWorkers, "a flush that writers wait on encodes on two goroutines")
	assert.EqualValues(t, storage.DefaultMaxBufferBytes, c.maxBufferBytes)
	assert.EqualValues(t, storage.DefaultMaxWALBytes, c.maxWALBytes)
	assert.EqualValues(t, defaultMemoryLimit, c.memoryLimit)
	assert.EqualValues(t, receiver.DefaultMaxBodyBytes, c.maxBody)
	assert.EqualValues(t, receiver.DefaultMaxDecodedBytes, c.maxDecoded)
	assert.Empty(t, c.pprofAddr, "pprof is off by default")
	assert.False(t, c.pprofContention, "block and mutex profiling is off by default")
	assert.False(t, c.showVersion)
}

// TestFlagFloors: a count, size or duration under what its flag means
// (0 or less, which the store and the handlers would read as their
// default, or grpc as no limit) is refused naming the flag, the range and
// the default; a flag whose 0 is documented still takes it.
func TestFlagFloors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-flush-interval", "0"}, "-flush-interval 0s: want more than 0 (the default is 10s)"},
		{[]string{"-flush-interval", "-1s"}, "-flush-interval -1s: want more than 0 (the default is 10s)"},
		{[]string{"-flush-bytes", "0"}, "-flush-bytes 0: want more than 0 (the default is 32MiB)"},
		{[]string{"-flush-workers", "0"}, "-flush-workers 0: want 1 or more (the default is 2)"},
		{[]string{"-flush-workers", "-2"}, "-flush-workers -2: want 1 or more (the default is 2)"},
		{[]string{"-max-buffer-bytes", "0"}, "-max-buffer-bytes 0: want more than 0 (the default is 128MiB)"},
		{[]string{"-max-wal-bytes", "0"}, "-max-wal-bytes 0: want more than 0 (the default is 4GiB)"},
		{[]string{"-max-body-bytes", "0"}, "-max-body-bytes 0: want more than 0 (the default is 32MiB)"},
		{[]string{"-max-decoded-bytes", "0"}, "-max-decoded-bytes 0: want more than 0 (the default is 128MiB)"},
		{[]string{"-max-decoded-memory", "0"}, "-max-decoded-memory 0: want more than 0 (the default is 64MiB)"},
		{[]string{"-http-read-timeout", "0"}, "-http-read-timeout 0s: want more than 0 (the default is 2m0s)"},
		{[]string{"-http-idle-timeout", "-1s"}, "-http-idle-timeout -1s: want more than 0 (the default is 2m0s)"},
		{[]string{"-max-grpc-streams", "0"}, "-max-grpc-streams 0: want 1 or more (the default is 256)"},
		{[]string{"-max-columns", "0"}, "-max-columns 0: want 1 or more (the default is 1024)"},
		{[]string{"-max-string-bytes", "-1"}, "-max-string-bytes -1: want 1 or more (the default is 1048576)"},
		{[]string{"-max-partitions-per-request", "0"}, "-max-partitions-per-request 0: want 1 or more (the default is 256)"},
		{[]string{"-dedup-window", "0s"}, "-dedup-window 0s: want more than 0 (the default is 15m0s)"},
		{[]string{"-buffer-wait", "-1s"}, "-buffer-wait -1s: want 0 or more (0 refuses at once)"},
		{[]string{"-shutdown-timeout", "-1s"}, "-shutdown-timeout -1s: want 0 or more (0 closes the streams at once)"},
		{[]string{"-compact-interval", "-1m"}, "-compact-interval -1m0s: want 0 or more (0 turns retention and compaction off)"},
		{[]string{"-compact-min-age", "-1m"}, "-compact-min-age -1m0s: want 0 or more (0 compacts a partition once its hour has ended)"},
		{[]string{"-s3-bucket", "b", "-local-retention", "-1h"}, "-local-retention -1h0m0s: want 0 or more (0 keeps the local partitions)"},
		{[]string{"-iceberg", "-iceberg-commit-interval", "0s"}, "-iceberg-commit-interval 0s: want more than 0 (the default is 1m0s)"},
		{[]string{"-iceberg", "-iceberg-snapshot-retention", "-1h"}, "-iceberg-snapshot-retention -1h0m0s: want more than 0 (the default is 1h0m0s)"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parseFlags(tt.args)
			assert.EqualError(t, err, tt.want)
		})
	}

	c, err := parseFlags([]string{"-buffer-wait", "0", "-min-free-disk", "0", "-compact-interval", "0", "-compact-min-age", "0",
		"-shutdown-timeout", "0", "-memory-limit", "0", "-max-buffer-bytes", "1GiB", "-s3-bucket", "b", "-local-retention", "0"})
	require.NoError(t, err, "each of these 0s is documented")
	assert.Negative(t, bufferWait(c.bufferWait), "-buffer-wait 0: the store refuses a write that finds the buffer full at once")
	assert.Negative(t, minFreeDisk(c.minFreeDisk), "-min-free-disk 0: the store keeps no floor")
	assert.Zero(t, c.compactEvery, "-compact-interval 0: no scheduled maintenance")
	assert.Nil(t, uploadRetention(c), "-compact-interval 0: no retention either")
	assert.Zero(t, c.compactMinAge, "-compact-min-age 0: a partition is compacted once its hour has ended")
	assert.Zero(t, c.shutdownWait, "-shutdown-timeout 0: the streams are closed at once")
	assert.Zero(t, c.memoryLimit, "-memory-limit 0: no heap limit, so no bound on -max-buffer-bytes")
	assert.Zero(t, c.s3.localRetention, "-local-retention 0: local partitions are kept")
}

// TestFlagFloorsCoverEveryFlag: a numeric flag added without a floor, or
// a floor left behind by a flag removed, fails every parse.
func TestFlagFloorsCoverEveryFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("n", 1, "")
	fs.String("s", "", "")
	assert.EqualError(t, checkFloors(fs, map[string]floor{}), "-n has no floor in floors.go")
	assert.EqualError(t, checkFloors(fs, map[string]floor{"n": positive, "gone": positive}), "a floor for -gone, which is no flag")
	assert.NoError(t, checkFloors(fs, map[string]floor{"n": positive}))
}

func TestFlagSizeErrors(t *testing.T) {
	tests := []struct{ flag, value, want string }{
		{"-flush-bytes", "32XB", `invalid value "32XB" for flag -flush-bytes: want a byte count or a size such as 32MiB`},
		{"-max-buffer-bytes", "-1", `invalid value "-1" for flag -max-buffer-bytes`},
		{"-max-wal-bytes", "", `invalid value "" for flag -max-wal-bytes`},
		{"-memory-limit", "MiB", `invalid value "MiB" for flag -memory-limit`},
		{"-max-body-bytes", "10EiB", "larger than 8 EiB"},
		{"-max-decoded-bytes", "1e9", `invalid value "1e9" for flag -max-decoded-bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"="+tt.value, func(t *testing.T) {
			_, err := parseFlags([]string{tt.flag, tt.value})
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err := parseFlags([]string{"-max-buffer-bytes", "300MiB", "-memory-limit", "400MiB"})
	assert.ErrorContains(t, err, "-max-buffer-bytes 300MiB is over half of -memory-limit 400MiB", "sizes are shown as they are written")
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged go install", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"go build in a checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel-0123456789ab-dirty"},
		{"clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}}, "devel-0123456789ab"},
		{"no VCS stamp", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, buildInfoVersion(&tt.bi))
		})
	}
	old := version
	t.Cleanup(func() { version = old })
	version = "v0.9.0-3-gabcdef"
	assert.Equal(t, "v0.9.0-3-gabcdef", versionString(), "the Makefile's -ldflags win")
	assert.Contains(t, versionLine(), "arcstore v0.9.0-3-gabcdef (go")

	c, err := parseFlags([]string{"-version"})
	require.NoError(t, err)
	assert.True(t, c.showVersion)
}

func TestPprofListener(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := parseFlags([]string{"-pprof-addr", "127.0.0.1:0", "-pprof-contention"})
	require.NoError(t, err)
	assert.True(t, c.pprofContention)
	srv, addr, err := startPprof(c.pprofAddr, quiet)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1"} {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	resp, err := http.Get("http://" + addr + "/api/v1/write/msgpack")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the pprof listener serves nothing else")

	_, _, err = startPprof(addr, quiet)
	assert.ErrorContains(t, err, "listen pprof", "a taken address is an error, not a silent no-op")
}

// TestFlagsDocumented checks every flag arcstore accepts has a row in
// docs/SIDECAR.md, the reference a user reads.
func TestFlagsDocumented(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = w // the flag set prints its usage to os.Stderr
	_, perr := parseFlags([]string{"-h"})
	os.Stderr = stderr
	require.NoError(t, w.Close())
	usage, err := io.ReadAll(r)
	require.NoError(t, err)
	require.ErrorIs(t, perr, flag.ErrHelp)

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "SIDECAR.md"))
	require.NoError(t, err)
	names := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(usage), -1)
	require.Greater(t, len(names), 20, "usage lists the flags:\n%s", usage)
	for _, m := range names {
		assert.Contains(t, string(doc), "`-"+m[1]+"`", "docs/SIDECAR.md documents -%s", m[1])
	}

	// Each row of the flags table gives the defaults of its flags, one
	// for all of them or one each; usage prints a default unless it is
	// the type's zero value.
	defaults := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+).*\n((?:    \t.*\n?)*)`).FindAllStringSubmatch(string(usage), -1) {
		d := regexp.MustCompile(`\(default (.*)\)\s*$`).FindStringSubmatch(m[2])
		if d != nil {
			defaults[m[1]] = strings.Trim(d[1], `"`)
		} else {
			defaults[m[1]] = ""
		}
	}
	checked := 0
	for _, row := range regexp.MustCompile("(?m)^\\| `-.*$").FindAllString(string(doc), -1) {
		cells := strings.Split(row, "|")
		require.GreaterOrEqual(t, len(cells), 4, "a row of the flags table: %s", row)
		flags := regexp.MustCompile("`-([a-z0-9-]+)`").FindAllStringSubmatch(cells[1], -1)
		docDefaults := strings.Split(strings.TrimSpace(cells[2]), ", ")
		for i, f := range flags {
			want, ok := defaults[f[1]]
			if !assert.True(t, ok, "docs/SIDECAR.md's flag -%s is one arcstore takes", f[1]) {
				continue
			}
			got := docDefaults[0]
			if len(docDefaults) == len(flags) {
				got = docDefaults[i]
			}
			assert.True(t, sameDefault(want, got), "docs/SIDECAR.md gives -%s the default %q; it is %q", f[1], got, want)
			checked++
		}
	}
	assert.Equal(t, len(names), checked, "every flag has one row in docs/SIDECAR.md's table")
}

// sameDefault reports whether a flag's default as usage prints it
// ("" for the zero value) is the one a docs table cell gives: the same
// word, duration or size, or for a zero value a word that says so.
func sameDefault(usage, doc string) bool {
	doc, _, _ = strings.Cut(strings.ReplaceAll(doc, "`", ""), " (")
	doc = strings.TrimSpace(doc)
	if usage == "" {
		return slices.Contains([]string{"", "0", "none", "off", "AWS"}, doc) || strings.HasPrefix(doc, "SQLite at ")
	}
	if usage == doc {
		return true
	}
	if a, err := time.ParseDuration(usage); err == nil {
		b, err := time.ParseDuration(doc)
		return err == nil && a == b
	}
	var a, b byteSize
	return a.Set(usage) == nil && b.Set(doc) == nil && a == b
}
