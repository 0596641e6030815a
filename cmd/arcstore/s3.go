package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/upload"
)

// s3Flags are the object-storage settings on the command line.
type s3Flags struct {
	endpoint, bucket, prefix, region string
	pathStyle                        bool
	config                           string
	localRetention                   time.Duration
}

func (f *s3Flags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "S3-compatible server URL (http:// or https://, which decides TLS); empty is AWS S3")
	fs.StringVar(&f.bucket, "s3-bucket", "", "upload every closed, compacted partition to this bucket, same layout as the data directory (credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the AWS SDK's chain)")
	fs.StringVar(&f.prefix, "s3-prefix", "", "key prefix in the bucket: <prefix>/<db>/<table>/date=.../hour=.../<file>.parquet")
	fs.StringVar(&f.region, "s3-region", "us-east-1", "region the requests are signed for")
	fs.BoolVar(&f.pathStyle, "s3-path-style", false, "path-style addressing (<endpoint>/<bucket>/<key>), for MinIO, versitygw and most self-hosted servers")
	fs.StringVar(&f.config, "s3-config", "", "YAML file of further upload settings: part_size, concurrency, request_timeout, interval, profile, tls (see docs/OBJECT-STORAGE.md)")
	fs.DurationVar(&f.localRetention, "local-retention", 0, "with -s3-bucket: delete a local partition once its hour ended this long ago and every file of it is verified in the bucket; 0 keeps them")
}

// Errors of the object-storage settings.
var (
	errS3WithoutBucket  = errors.New("-s3-endpoint, -s3-prefix, -s3-path-style, -s3-config and -local-retention need -s3-bucket")
	errS3WithoutParquet = errors.New("-s3-bucket uploads Parquet: it does not go with -parquet=false")
)

func (f *s3Flags) check(parquet bool) error {
	if f.bucket == "" {
		if f.endpoint != "" || f.prefix != "" || f.pathStyle || f.config != "" || f.localRetention != 0 {
			return errS3WithoutBucket
		}
		return nil
	}
	if !parquet {
		return errS3WithoutParquet
	}
	return nil
}

// s3File is the -s3-config file: what does not fit a flag.
type s3File struct {
	// PartSize of multipart uploads in bytes (files up to it go in one
	// PutObject); at least 5 MiB.
	PartSize int64 `yaml:"part_size"`
	// Concurrency: parts of a file in flight at once.
	Concurrency    int           `yaml:"concurrency"`
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// Interval between scans of the partition tree.
	Interval time.Duration `yaml:"interval"`
	// Profile of the AWS shared config files.
	Profile string `yaml:"profile"`
	TLS     struct {
		CAFile             string `yaml:"ca_file"`
		InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	} `yaml:"tls"`
}

// newUploader builds the uploader from the flags and the config file; nil
// when no bucket is configured.
func newUploader(c config, log *slog.Logger, table upload.Table) (*upload.Uploader, error) {
	f := c.s3
	if f.bucket == "" {
		return nil, nil
	}
	var file s3File
	if f.config != "" {
		data, err := os.ReadFile(f.config)
		if err != nil {
			return nil, fmt.Errorf("read -s3-config: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("-s3-config %s: %w", f.config, err)
		}
	}
	cfg := upload.S3Config{Endpoint: f.endpoint, Bucket: f.bucket, Region: f.region, PathStyle: f.pathStyle, Profile: file.Profile}
	if file.TLS.CAFile != "" || file.TLS.InsecureSkipVerify {
		t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: file.TLS.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
		if file.TLS.CAFile != "" {
			pem, err := os.ReadFile(file.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("read s3 tls ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("s3 tls ca_file %s: no PEM certificate", file.TLS.CAFile)
			}
			t.RootCAs = pool
		}
		cfg.TLS = t
	}
	bucket, err := upload.NewS3(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("object storage: %w", err)
	}
	return upload.New(upload.Config{
		Bucket: bucket, BucketName: f.bucket, Prefix: f.prefix, CompactMinAge: c.compactMinAge, LocalRetention: f.localRetention,
		Retention: uploadRetention(c), Interval: file.Interval, PartSize: file.PartSize, Concurrency: file.Concurrency,
		Timeout: file.RequestTimeout, Logger: log, Table: table,
	})
}

// With a bucket, -retention is the uploader's: a partition past its age is
// deleted once verified in the bucket, as with -local-retention, never
// before its upload. The store applies it only without one. Both run only
// with scheduled maintenance (-compact-interval 0 turns retention off).
func uploadRetention(c config) storage.Retention {
	if c.compactEvery <= 0 {
		return nil
	}
	return c.retention
}

func storeRetention(c config) storage.Retention {
	if c.s3.bucket != "" {
		return nil
	}
	return c.retention
}

// checkBucket says at start whether the bucket takes the credentials: a
// refusal is logged as an error and fails /ready until it is fixed; an
// unreachable bucket is a warning (uploads catch up when it is back).
func checkBucket(u *upload.Uploader, bucket string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch err := u.Check(ctx); {
	case err == nil:
		log.Info("object storage ready", "bucket", bucket)
	case u.Ready() != nil:
		log.Error("object storage refuses the uploads: fix the credentials or the bucket; /ready fails until then, local partitions are kept", "bucket", bucket, "error", err)
	default:
		log.Warn("object storage unreachable; local partitions are kept and uploaded when it is back", "bucket", bucket, "error", err)
	}
}
