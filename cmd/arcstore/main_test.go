package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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
		{"no dedup window", []string{"-dedup-window", "0s"}, "-dedup-window must be positive"},
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
