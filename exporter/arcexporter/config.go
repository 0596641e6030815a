package arcexporter

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config of the arc exporter. The gRPC client settings (endpoint, tls,
// headers, compression, keepalive, auth) are the collector's usual ones.
type Config struct {
	configgrpc.ClientConfig `mapstructure:",squash"`
	// Database is the sidecar database the rows go to.
	Database string `mapstructure:"database"`
	// BatchSize is the number of rows per Arrow record batch, per table.
	BatchSize int `mapstructure:"batch_size"`

	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	BackOffConfig configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
}

// Limits of batch_size: a batch is one gRPC message, and the sidecar
// refuses messages over 64 MiB.
const maxBatchSize = 65536

var (
	errNoEndpoint  = errors.New("endpoint must be set to the sidecar's host:port")
	errBatchSize   = fmt.Errorf("batch_size must be between 1 and %d", maxBatchSize)
	errBadDatabase = errors.New("database must match [A-Za-z0-9_][A-Za-z0-9_-]{0,63} and not be _arcstore")
)

var databaseRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$`)

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

// Unmarshal fills in the defaults that depend on other settings:
//
//   - tls: unset, a loopback endpoint is plaintext (the sidecar listens
//     without TLS on loopback by default) and any other endpoint uses TLS;
//     tls settings without tls::insecure mean TLS.
//   - sending_queue with storage: wait_for_result (the default, which
//     exporterhelper refuses with storage) and the batcher (which breaks
//     exactly once after a crash, see persistentBatching) are off unless
//     set.
//   - batch_size caps the queue's batches too (max_size), unless
//     sending_queue::batch sets sizes of its own. Without it a batch_size
//     above the queue's default of 1000 items would have no effect: every
//     request would hold at most 1000 rows, so every Arrow batch would too.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	if err := conf.Unmarshal(c); err != nil {
		return err
	}
	if !conf.IsSet("tls::insecure") {
		c.TLS.Insecure = !conf.IsSet("tls") && isLoopback(c.Endpoint)
	}
	if !c.QueueConfig.HasValue() {
		return nil
	}
	q := c.QueueConfig.Get()
	if q.StorageID != nil {
		if !conf.IsSet("sending_queue::wait_for_result") {
			q.WaitForResult = false
		}
		if !conf.IsSet("sending_queue::batch") {
			q.Batch = configoptional.None[exporterhelper.BatchConfig]()
		}
	}
	if !conf.IsSet("batch_size") || conf.IsSet("sending_queue::batch::min_size") ||
		conf.IsSet("sending_queue::batch::max_size") {
		return nil
	}
	if !q.Batch.HasValue() || q.Batch.Get().Sizer != exporterhelper.RequestSizerTypeItems {
		return nil
	}
	q.Batch.Get().MaxSize = int64(c.BatchSize)
	return nil
}

// isLoopback reports whether a gRPC target is on this host: a unix socket,
// localhost or a loopback address.
func isLoopback(endpoint string) bool {
	if strings.HasPrefix(endpoint, "unix:") {
		return true
	}
	endpoint = strings.TrimPrefix(endpoint, "dns:///")
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		host = endpoint
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate checks the settings a running exporter depends on.
func (c *Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errNoEndpoint)
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatchSize {
		errs = append(errs, errBatchSize)
	}
	if !databaseRE.MatchString(c.Database) || c.Database == "_arcstore" {
		errs = append(errs, fmt.Errorf("%w: got %q", errBadDatabase, c.Database))
	}
	return errors.Join(errs...)
}
