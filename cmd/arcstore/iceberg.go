package main

import (
	"errors"
	"flag"
	"log/slog"
	"time"

	"github.com/arc-otel/arc-otel/storage/iceberg"
)

// icebergFlags are the Iceberg table settings on the command line.
type icebergFlags struct {
	enabled           bool
	catalog           string
	commitInterval    time.Duration
	snapshotRetention time.Duration
}

func (f *icebergFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "iceberg", false, "keep Apache Iceberg (v2) tables over the Parquet files: one per database and table, catalog \"arcstore\" (see docs/LAKE.md)")
	fs.StringVar(&f.catalog, "iceberg-catalog", "", "with -iceberg: the catalog, postgres://... (SQL catalog on PostgreSQL) or http(s)://... (REST); empty is SQLite at <data-dir>/_arcstore/iceberg/catalog.db")
	fs.DurationVar(&f.commitInterval, "iceberg-commit-interval", iceberg.DefaultCommitInterval, "with -iceberg: how often the tables are brought up to date with the files (a flushed file is in its table at most this long after the flush)")
	fs.DurationVar(&f.snapshotRetention, "iceberg-snapshot-retention", iceberg.DefaultSnapshotRetention, "with -iceberg: expire table snapshots older than this (keeping the last 10); files only expired snapshots list are deleted then")
}

// Errors of the Iceberg settings.
var (
	errIcebergWithoutFlag    = errors.New("-iceberg-catalog, -iceberg-commit-interval and -iceberg-snapshot-retention need -iceberg")
	errIcebergWithoutParquet = errors.New("-iceberg registers Parquet files: it does not go with -parquet=false")
)

func (f *icebergFlags) check(set map[string]bool, parquet, bucket bool) error {
	if !f.enabled {
		if set["iceberg-catalog"] || set["iceberg-commit-interval"] || set["iceberg-snapshot-retention"] {
			return errIcebergWithoutFlag
		}
		return nil
	}
	if !parquet {
		return errIcebergWithoutParquet
	}
	if f.catalog != "" && !bucket {
		return iceberg.ErrSharedCatalogLocal
	}
	return nil
}

// newCommitter builds the Iceberg committer from the flags; nil without
// -iceberg. With a bucket the tables are over its objects.
func newCommitter(c config, log *slog.Logger) (*iceberg.Committer, error) {
	f := c.iceberg
	if !f.enabled {
		return nil, nil
	}
	cfg := iceberg.Config{
		DataDir: c.dataDir, Catalog: f.catalog, CommitInterval: f.commitInterval, SnapshotRetention: f.snapshotRetention, Logger: log,
	}
	if c.s3.bucket != "" {
		cfg.Bucket = &iceberg.Bucket{Name: c.s3.bucket, Prefix: c.s3.prefix, Props: iceberg.BucketProps(c.s3.endpoint, c.s3.region, c.s3.pathStyle)}
	}
	return iceberg.New(cfg)
}
