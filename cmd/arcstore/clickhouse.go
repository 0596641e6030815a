package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arc-otel/arc-otel/storage/clickhouse"
)

// clickhouseEnvPassword holds the ClickHouse password for deployments that
// pass secrets in the environment; it overrides the config file's.
const clickhouseEnvPassword = "ARCSTORE_CLICKHOUSE_PASSWORD"

// clickhouseFile is the -clickhouse-config file: what does not fit a flag.
type clickhouseFile struct {
	// Database, if set, takes the rows of every sidecar database; by
	// default each goes to the ClickHouse database of its own name.
	Database     string `yaml:"database"`
	User         string `yaml:"user"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	// Cluster creates ON CLUSTER tables: ReplicatedMergeTree <table>_local
	// on each node and a Distributed <table> over them.
	Cluster string `yaml:"cluster"`
	// TTL expires rows, a ClickHouse interval such as "INTERVAL 30 DAY".
	TTL         string `yaml:"ttl"`
	DedupWindow int    `yaml:"dedup_window"`
	Compression bool   `yaml:"compression"`
	TLS         struct {
		Enabled            bool   `yaml:"enabled"`
		CAFile             string `yaml:"ca_file"`
		CertFile           string `yaml:"cert_file"`
		KeyFile            string `yaml:"key_file"`
		ServerName         string `yaml:"server_name"`
		InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	} `yaml:"tls"`
}

// Errors of the ClickHouse settings.
var (
	errClickHouseConfigWithoutAddr = errors.New("-clickhouse-config needs -clickhouse-addr")
	errNoStorage                   = errors.New("-parquet=false needs -clickhouse-addr: nothing would store the rows")
	errTLSPair                     = errors.New("tls cert_file and key_file go together")
)

// clickhouseSink builds the sink from the flags and the config file; nil
// when ClickHouse is not configured.
func clickhouseSink(c config, log *slog.Logger) (*clickhouse.Sink, error) {
	if c.clickhouseAddr == "" {
		return nil, nil
	}
	var f clickhouseFile
	if c.clickhouseConfig != "" {
		data, err := os.ReadFile(c.clickhouseConfig)
		if err != nil {
			return nil, fmt.Errorf("read -clickhouse-config: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("-clickhouse-config %s: %w", c.clickhouseConfig, err)
		}
	}
	cfg := clickhouse.Config{
		Addr: c.clickhouseAddr, Database: f.Database, User: f.User, Password: f.Password, Cluster: f.Cluster, TTL: f.TTL,
		DedupWindow: f.DedupWindow, Compression: f.Compression, Logger: log,
	}
	if f.PasswordFile != "" {
		pw, err := os.ReadFile(f.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("read clickhouse password_file: %w", err)
		}
		cfg.Password = strings.TrimSpace(string(pw))
	}
	if pw := os.Getenv(clickhouseEnvPassword); pw != "" {
		cfg.Password = pw
	}
	if f.TLS.Enabled {
		t, err := clickhouseTLS(f)
		if err != nil {
			return nil, err
		}
		cfg.TLS = t
	}
	return clickhouse.New(cfg)
}

func clickhouseTLS(f clickhouseFile) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.TLS.ServerName, InsecureSkipVerify: f.TLS.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
	if f.TLS.CAFile != "" {
		pem, err := os.ReadFile(f.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read clickhouse tls ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("clickhouse tls ca_file %s: no PEM certificate", f.TLS.CAFile)
		}
		t.RootCAs = pool
	}
	if (f.TLS.CertFile == "") != (f.TLS.KeyFile == "") {
		return nil, errTLSPair
	}
	if f.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.TLS.CertFile, f.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load clickhouse client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
