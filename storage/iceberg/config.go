package iceberg

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/arc-otel/arc-otel/storage"
)

// Config configures a Committer. Zero values take the defaults below.
type Config struct {
	// DataDir is the store's data directory: the hive tree the tables
	// cover, and (under _arcstore/iceberg) the embedded catalog, the local
	// tables' metadata and their links to the data files.
	DataDir string
	// Catalog is empty for the embedded SQLite catalog in the data
	// directory, postgres://... for an SQL catalog on PostgreSQL, or
	// http(s)://... for a REST catalog.
	Catalog string
	// Bucket, if set, is the warehouse: the tables reference the objects
	// the uploader verified there, and keep their metadata under
	// <prefix>/_iceberg/. Without it the tables reference the local files.
	Bucket *Bucket
	// CommitInterval is how often the tables are brought up to date with
	// the files: a flushed file is in its table at most this long after
	// the flush (plus the pass's own time).
	CommitInterval time.Duration
	// SnapshotRetention expires snapshots older than this, keeping the
	// last KeepSnapshots; files only they reference are then deleted.
	SnapshotRetention time.Duration
	KeepSnapshots     int
	// OrphanAge: metadata files no snapshot references (a commit cut off
	// by a crash) are deleted once they are this old.
	OrphanAge time.Duration
	Logger    *slog.Logger
}

// Bucket is the object-storage warehouse: the uploader's bucket.
type Bucket struct {
	Name, Prefix string
	// Props are iceberg-go's S3 settings (BucketProps); credentials come
	// from the AWS SDK's chain like the uploader's.
	Props map[string]string
}

// BucketProps are iceberg-go's S3 settings for the uploader's server: an
// endpoint (empty: AWS S3), the region, path-style addressing. With an
// endpoint the SDK's newer checksums are off, as they are for the
// uploader: several S3-compatible servers refuse them.
func BucketProps(endpoint, region string, pathStyle bool) map[string]string {
	props := map[string]string{
		iceio.S3Region:                 region,
		iceio.S3ForceVirtualAddressing: strconv.FormatBool(!pathStyle),
	}
	if endpoint != "" {
		props[iceio.S3EndpointURL] = endpoint
		props[iceio.S3CompatMode] = "true"
	}
	return props
}

// Defaults.
const (
	DefaultCommitInterval    = time.Minute
	DefaultSnapshotRetention = time.Hour
	DefaultKeepSnapshots     = 10
	DefaultOrphanAge         = 24 * time.Hour
)

// CatalogName is the catalog's name: the key of its rows in a SQL
// catalog, which other engines (pyiceberg, Spark) must name alike.
const CatalogName = "arcstore"

// Layout under the data directory's system folder.
const (
	icebergDirName = "iceberg"
	catalogFile    = "catalog.db"
	dataDirName    = "data" // a local table's links to the hive files
	bucketDirName  = "_iceberg"
)

// Dir is the folder of the embedded catalog, the local tables' metadata
// and links: <data-dir>/_arcstore/iceberg.
func Dir(dataDir string) string { return filepath.Join(storage.SystemDir(dataDir), icebergDirName) }

// CatalogPath is the embedded SQLite catalog's file.
func CatalogPath(dataDir string) string { return filepath.Join(Dir(dataDir), catalogFile) }

// ErrSharedCatalogLocal reports a shared catalog over a local warehouse:
// other machines cannot read the files, and two sidecars whose data
// directories have the same path would name the same tables and remove
// each other's files.
var ErrSharedCatalogLocal = errors.New("a shared iceberg catalog needs the bucket warehouse (-s3-bucket): a local one is this machine's alone")

// ErrCatalogURI reports an -iceberg-catalog the sidecar cannot use.
var ErrCatalogURI = errors.New("iceberg catalog must be postgres://... or http(s)://... (empty: SQLite in the data directory)")

func (cfg *Config) check() error {
	if cfg.DataDir == "" {
		return errors.New("iceberg: no data directory")
	}
	if cfg.Catalog != "" {
		u, err := url.Parse(cfg.Catalog)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%w: %q", ErrCatalogURI, redact(cfg.Catalog))
		}
		switch strings.ToLower(u.Scheme) {
		case "postgres", "postgresql", "http", "https":
		default:
			return fmt.Errorf("%w: scheme %q", ErrCatalogURI, u.Scheme)
		}
	}
	if cfg.Bucket != nil && cfg.Bucket.Name == "" {
		return errors.New("iceberg: bucket without a name")
	}
	if cfg.Catalog != "" && cfg.Bucket == nil {
		return ErrSharedCatalogLocal
	}
	if cfg.CommitInterval < 0 || cfg.SnapshotRetention < 0 || cfg.KeepSnapshots < 0 || cfg.OrphanAge < 0 {
		return errors.New("iceberg: negative interval, retention or count")
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = DefaultCommitInterval
	}
	if cfg.SnapshotRetention == 0 {
		cfg.SnapshotRetention = DefaultSnapshotRetention
	}
	if cfg.KeepSnapshots == 0 {
		cfg.KeepSnapshots = DefaultKeepSnapshots
	}
	if cfg.OrphanAge == 0 {
		cfg.OrphanAge = DefaultOrphanAge
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// redact drops a URI's password for logs and errors.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
