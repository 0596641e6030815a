package arcexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id    component.ID
		check func(t *testing.T, c *Config)
	}{
		{component.NewID(metadata.Type), func(t *testing.T, c *Config) {
			assert.Equal(t, createDefaultConfig(), c)
			assert.Equal(t, "127.0.0.1:8815", c.Endpoint)
			assert.Equal(t, "default", c.Database)
			assert.Equal(t, 1000, c.BatchSize)
		}},
		{component.NewIDWithName(metadata.Type, "custom"), func(t *testing.T, c *Config) {
			assert.Equal(t, "sidecar.internal:8815", c.Endpoint)
			assert.Equal(t, "prod-eu", c.Database)
			assert.Equal(t, 500, c.BatchSize)
			assert.Equal(t, 10*time.Second, c.TimeoutConfig.Timeout)
			assert.True(t, c.TLS.Insecure)
			auth, ok := c.Headers.Get("authorization")
			assert.True(t, ok)
			assert.Equal(t, "Bearer s3cret", string(auth))
			assert.Equal(t, 4, c.QueueConfig.Get().NumConsumers)
			assert.Equal(t, time.Second, c.BackOffConfig.InitialInterval)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			require.NoError(t, cfg.Validate())
			tt.check(t, cfg)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []error
	}{
		{"defaults are valid", func(*Config) {}, nil},
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, []error{errNoEndpoint}},
		{"zero batch size", func(c *Config) { c.BatchSize = 0 }, []error{errBatchSize}},
		{"batch size too large", func(c *Config) { c.BatchSize = maxBatchSize + 1 }, []error{errBatchSize}},
		{"path traversal in database", func(c *Config) { c.Database = "../etc" }, []error{errBadDatabase}},
		{"reserved database", func(c *Config) { c.Database = "_arcstore" }, []error{errBadDatabase}},
		{"every error at once", func(c *Config) { c.Endpoint, c.BatchSize, c.Database = "", -1, "" },
			[]error{errNoEndpoint, errBatchSize, errBadDatabase}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tt.mutate(cfg)
			err := cfg.Validate()
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			for _, w := range tt.want {
				assert.ErrorIs(t, err, w)
			}
		})
	}
}
