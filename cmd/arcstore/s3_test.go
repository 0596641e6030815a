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

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/upload"
)

func TestS3FlagErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want error
	}{
		{"endpoint without bucket", []string{"-s3-endpoint", "http://127.0.0.1:7070"}, errS3WithoutBucket},
		{"local retention without bucket", []string{"-local-retention", "24h"}, errS3WithoutBucket},
		{"bucket without parquet", []string{"-s3-bucket", "b", "-parquet=false", "-clickhouse-addr", "ch:9000"}, errS3WithoutParquet},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	c, err := parseFlags([]string{"-s3-bucket", "b", "-s3-endpoint", "http://127.0.0.1:7070", "-s3-prefix", "otel", "-s3-path-style", "-local-retention", "48h"})
	require.NoError(t, err)
	assert.Equal(t, s3Flags{endpoint: "http://127.0.0.1:7070", bucket: "b", prefix: "otel", region: "us-east-1", pathStyle: true, localRetention: 48 * time.Hour}, c.s3)
}

func TestS3ConfigFile(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	notPEM := write("ca", "not a certificate")
	tests := []struct {
		name, yaml, want string
		check            func(t *testing.T, cfg upload.Config)
	}{
		{"every setting", "part_size: 33554432\nconcurrency: 8\nrequest_timeout: 1m\ninterval: 5s\ntls: {insecure_skip_verify: true}\n", "",
			func(t *testing.T, cfg upload.Config) {
				assert.EqualValues(t, 32<<20, cfg.PartSize)
				assert.Equal(t, 8, cfg.Concurrency)
				assert.Equal(t, time.Minute, cfg.Timeout)
				assert.Equal(t, 5*time.Second, cfg.Interval)
				assert.Equal(t, "otel", cfg.Prefix)
				assert.Equal(t, 10*time.Minute, cfg.CompactMinAge, "the store's")
			}},
		{"empty file", "", "", func(t *testing.T, cfg upload.Config) {
			assert.EqualValues(t, upload.DefaultPartSize, cfg.PartSize)
			assert.Equal(t, upload.DefaultInterval, cfg.Interval)
		}},
		{"unknown key", "partsize: 1\n", "field partsize not found", nil},
		{"part under 5 MiB", "part_size: 1048576\n", "under S3's smallest part", nil},
		{"bad ca file", "tls: {ca_file: " + notPEM + "}\n", "no PEM certificate", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config{compactMinAge: 10 * time.Minute, s3: s3Flags{bucket: "b", prefix: "otel", region: "us-east-1", config: write("s3.yaml", tt.yaml)}}
			u, err := newUploader(c, quiet, nil)
			if tt.want != "" {
				assert.ErrorContains(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			tt.check(t, u.Config())
		})
	}
	u, err := newUploader(config{}, quiet, nil)
	require.NoError(t, err)
	assert.Nil(t, u, "no bucket, no uploads")
	_, err = newUploader(config{s3: s3Flags{bucket: "b", endpoint: "127.0.0.1:7070"}}, quiet, nil)
	assert.ErrorContains(t, err, "want http://host[:port]")
}

// TestRetentionWithBucket: with a bucket the uploader applies -retention
// (after verifying the upload) and the store does not; without one the
// store does; -compact-interval 0 turns it off either way.
func TestRetentionWithBucket(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	want := storage.Retention{"default/traces": 168 * time.Hour, "*/*": 720 * time.Hour}
	for _, tt := range []struct {
		name          string
		args          []string
		store, upload storage.Retention
	}{
		{"without a bucket", nil, want, nil},
		{"with a bucket", []string{"-s3-bucket", "b"}, nil, want},
		{"with a bucket, no scheduled maintenance", []string{"-s3-bucket", "b", "-compact-interval", "0"}, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(append([]string{"-retention", "default/traces=168h,*/*=720h"}, tt.args...))
			require.NoError(t, err)
			assert.Equal(t, tt.store, storeRetention(c), "the store's")
			u, err := newUploader(c, slog.New(slog.DiscardHandler), nil)
			require.NoError(t, err)
			if u == nil {
				assert.Nil(t, tt.upload)
				return
			}
			assert.Equal(t, tt.upload, u.Config().Retention, "the uploader's")
		})
	}
}
