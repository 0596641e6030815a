package iceberg

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/driver/sqliteshim"

	// The bucket warehouse's table IO (s3://).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
)

// Environment variables of a REST catalog's credentials (never flags:
// flags show in ps).
const (
	RESTTokenEnv      = "ARCSTORE_ICEBERG_TOKEN"
	RESTCredentialEnv = "ARCSTORE_ICEBERG_CREDENTIAL" // client_id:client_secret (OAuth2)
)

// sqlProps are the SQL catalog's settings: create its two tables when
// missing, with the V1 layout (an iceberg_type column) that Spark's JDBC
// catalog (jdbc.schema-version=V1) and pyiceberg's SqlCatalog read.
var sqlProps = iceberg.Properties{"init_catalog_tables": "true", sqlcat.SchemaVersionKey: sqlcat.SchemaVersionV1}

// openCatalog connects to the configured catalog.
func (c *Committer) openCatalog(ctx context.Context) (catalog.Catalog, error) {
	uri := c.cfg.Catalog
	switch {
	case uri == "":
		// Durable in its parent: the catalog file is all a bucket's
		// tables are known by.
		if err := layout.MkdirDurable(c.fs, Dir(c.cfg.DataDir)); err != nil {
			return nil, fmt.Errorf("create iceberg dir: %w", err)
		}
		// Readers (pyiceberg, Spark) lock the file now and then: wait
		// for them rather than fail the commit.
		// A URI: its path escaped, or a # or ? in the data directory's
		// path would cut it short and open another file.
		dsn := "file:" + (&url.URL{Path: filepath.ToSlash(CatalogPath(c.cfg.DataDir))}).EscapedPath() + "?_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)"
		db, err := sql.Open(sqliteshim.ShimName, dsn)
		if err != nil {
			return nil, fmt.Errorf("open catalog: %w", err)
		}
		return c.sqlCatalog(db, sqlcat.SQLite)
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return c.sqlCatalog(sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(uri))), sqlcat.Postgres)
	default:
		opts := []rest.Option{rest.WithAdditionalProps(c.ioProps())}
		if tok := os.Getenv(RESTTokenEnv); tok != "" {
			opts = append(opts, rest.WithOAuthToken(tok))
		}
		if cred := os.Getenv(RESTCredentialEnv); cred != "" {
			opts = append(opts, rest.WithCredential(cred))
		}
		cat, err := rest.NewCatalog(ctx, CatalogName, uri, opts...)
		if err != nil {
			return nil, fmt.Errorf("connect to REST catalog %s: %w", redact(uri), err)
		}
		return cat, nil
	}
}

func (c *Committer) sqlCatalog(db *sql.DB, d sqlcat.SupportedDialect) (catalog.Catalog, error) {
	props := c.ioProps()
	maps.Copy(props, sqlProps)
	cat, err := sqlcat.NewCatalog(CatalogName, db, d, props)
	for attempt := 1; err != nil && tablesRace(err) && attempt < 5; attempt++ {
		// Sidecars starting together create the catalog's tables at once,
		// and PostgreSQL's CREATE TABLE IF NOT EXISTS fails the losers
		// (TestSharedCatalogConcurrentCommitters): the tables are there now.
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		cat, err = sqlcat.NewCatalog(CatalogName, db, d, props)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open %s catalog: %w", d, err)
	}
	c.closeDB = db.Close
	return cat, nil
}

// tablesRace says whether err is what PostgreSQL answers concurrent
// CREATE TABLE IF NOT EXISTS of one table with: a unique violation
// (23505), a duplicate table (42P07) or object (42710).
func tablesRace(err error) bool {
	var pg pgdriver.Error
	if !errors.As(err, &pg) {
		return false
	}
	switch pg.Field('C') {
	case "23505", "42P07", "42710":
		return true
	}
	return false
}

// ioProps are the catalog's settings for the tables' file IO: the
// bucket's endpoint, region and addressing (credentials come from the AWS
// SDK's chain).
func (c *Committer) ioProps() iceberg.Properties {
	props := iceberg.Properties{}
	if c.cfg.Bucket != nil {
		maps.Copy(props, c.cfg.Bucket.Props)
	}
	return props
}

// tableProps are every table's properties: format v2; each commit's
// metadata file replaces the previous ones past the last ten; manifests
// merge so that a table committed every minute keeps few of them.
func tableProps() iceberg.Properties {
	return iceberg.Properties{
		table.PropertyFormatVersion:               "2",
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "10",
		table.ManifestMergeEnabledKey:             "true",
		table.CommitNumRetriesKey:                 "8",
		table.CommitMinRetryWaitMsKey:             "50",
		table.CommitMaxRetryWaitMsKey:             "2000",
	}
}

// table loads a table, creating its namespace and itself on first use
// from the contract's schema (OTLP tables) or the first file's (a
// measurement's).
func (c *Committer) table(ctx context.Context, id tableID, files []wanted) (*table.Table, error) {
	ident := id.ident()
	tbl, err := c.cat.LoadTable(ctx, ident)
	if err == nil {
		return tbl, c.inWarehouse(id, tbl)
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, err
	}
	var sc *iceberg.Schema
	if st, ok := schema.Lookup(id.table); ok {
		if sc, err = icebergSchema(st.Arrow); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", id, err)
		}
	} else {
		for _, f := range files {
			as, err := fileSchema(f.local)
			if err != nil {
				continue // vanished, or unreadable: the next one
			}
			if sc, err = icebergSchema(as); err == nil {
				break
			}
		}
		if sc == nil {
			return nil, fmt.Errorf("%w: %s: no file whose schema can start the table", errConflict, id)
		}
	}
	spec, err := partitionSpec(sc)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", id, err)
	}
	if err := c.cat.CreateNamespace(ctx, ident[:1], nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", ident[0], err)
	}
	props := tableProps()
	mapping, err := json.Marshal(sc.NameMapping())
	if err != nil {
		return nil, err
	}
	props[table.DefaultNameMappingKey] = string(mapping)
	tbl, err = c.cat.CreateTable(ctx, ident, sc, catalog.WithLocation(c.location(id)), catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		// Another committer was first.
		if tbl, err = c.cat.LoadTable(ctx, ident); err != nil {
			return nil, err
		}
		return tbl, c.inWarehouse(id, tbl)
	}
	if err != nil {
		return nil, fmt.Errorf("create table %s: %w", id, err)
	}
	c.log.Info("created an Iceberg table", "table", id.String(), "location", tbl.Location(), "columns", len(sc.Fields()))
	return tbl, nil
}

// ErrOtherWarehouse reports a table that lives in another warehouse than
// this sidecar's: committing this warehouse's files into it would list
// the same rows twice (its old files and their copies here).
var ErrOtherWarehouse = errors.New("the table is in another warehouse")

// inWarehouse checks that a table lives where this sidecar keeps it: a
// sidecar given -s3-bucket after keeping local tables (or another
// sidecar's table of a shared catalog in a local warehouse) must not mix
// the two.
func (c *Committer) inWarehouse(id tableID, tbl *table.Table) error {
	if have, want := strings.TrimRight(tbl.Location(), "/"), c.location(id); have != want {
		return fmt.Errorf("%w: %s is at %s, this sidecar keeps it at %s; drop the table (or use another catalog) to start it afresh", ErrOtherWarehouse, id, have, want)
	}
	return nil
}

// location is where a table keeps its metadata (and, locally, its links):
// never inside the hive tree, where a metadata/ folder next to date=...
// breaks Spark's plain read of the folder.
func (c *Committer) location(id tableID) string {
	if b := c.cfg.Bucket; b != nil {
		key := strings.Trim(b.Prefix, "/")
		if key != "" {
			key += "/"
		}
		return objectURI(b.Name, key+bucketDirName+"/"+id.db+"/"+id.table)
	}
	return fileURI(c.tableDir(id))
}

// fileURI is an absolute local path as a file:// URI, the form every
// engine (Spark, pyiceberg, DuckDB) resolves alike; characters a URI
// reserves (#, ?, %) are escaped.
func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String() }

// localPath is the path of a file:// URI.
func localPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	return filepath.FromSlash(u.Path)
}
