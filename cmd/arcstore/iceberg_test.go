package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/iceberg"
)

func TestIcebergFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want error
	}{
		{"catalog without -iceberg", []string{"-iceberg-catalog", "postgres://h/db"}, errIcebergWithoutFlag},
		{"interval without -iceberg", []string{"-iceberg-commit-interval", "10s"}, errIcebergWithoutFlag},
		{"retention without -iceberg", []string{"-iceberg-snapshot-retention", "2h"}, errIcebergWithoutFlag},
		{"no parquet", []string{"-iceberg", "-parquet=false", "-clickhouse-addr", "ch:9000"}, errIcebergWithoutParquet},
		{"shared catalog, local files", []string{"-iceberg", "-iceberg-catalog", "postgres://h/db"}, iceberg.ErrSharedCatalogLocal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	c, err := parseFlags([]string{"-iceberg"})
	require.NoError(t, err)
	assert.Equal(t, icebergFlags{enabled: true, commitInterval: time.Minute, snapshotRetention: time.Hour}, c.iceberg)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cm, err := newCommitter(c, quiet)
	require.NoError(t, err)
	require.NotNil(t, cm)
	c, err = parseFlags([]string{"-iceberg", "-iceberg-catalog", "mysql://h/db", "-s3-bucket", "b"})
	require.NoError(t, err)
	_, err = newCommitter(c, quiet)
	assert.ErrorIs(t, err, iceberg.ErrCatalogURI)
	c, err = parseFlags(nil)
	require.NoError(t, err)
	cm, err = newCommitter(c, quiet)
	require.NoError(t, err)
	assert.Nil(t, cm, "off without -iceberg")
}
