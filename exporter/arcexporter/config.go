package arcexporter

import (
	"errors"
	"fmt"
	"regexp"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
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

var _ component.Config = (*Config)(nil)

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
