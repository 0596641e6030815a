package arcexporter

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id      component.ID
		invalid []error // what Validate must report, nil for a valid config
		check   func(t *testing.T, c *Config)
	}{
		{id: component.NewID(metadata.Type), check: func(t *testing.T, c *Config) {
			assert.Equal(t, createDefaultConfig(), c)
			assert.Equal(t, "127.0.0.1:8815", c.Endpoint)
			assert.Equal(t, "default", c.Database)
			assert.Equal(t, 1000, c.BatchSize)
			require.True(t, c.QueueConfig.HasValue())
			q := c.QueueConfig.Get()
			require.True(t, q.Batch.HasValue())
			assert.Zero(t, q.Batch.Get().MinSize, "a request never waits for others")
			assert.EqualValues(t, 1000, q.Batch.Get().MaxSize)
		}},
		{id: component.NewIDWithName(metadata.Type, "custom"), check: func(t *testing.T, c *Config) {
			assert.Equal(t, "sidecar.internal:8815", c.Endpoint)
			assert.Equal(t, "prod-eu", c.Database)
			assert.Equal(t, 500, c.BatchSize)
			assert.Equal(t, 10*time.Second, c.TimeoutConfig.Timeout)
			assert.True(t, c.TLS.Insecure)
			auth, ok := c.Headers.Get("authorization")
			assert.True(t, ok)
			assert.Equal(t, "Bearer s3cret", string(auth))
			assert.Equal(t, 4, c.QueueConfig.Get().NumConsumers)
			assert.EqualValues(t, 5000, c.QueueConfig.Get().QueueSize)
			assert.EqualValues(t, 500, c.QueueConfig.Get().Batch.Get().MaxSize)
			assert.Equal(t, time.Second, c.BackOffConfig.InitialInterval)
			assert.Zero(t, c.BackOffConfig.MaxElapsedTime)
		}},
		{id: component.NewIDWithName(metadata.Type, "big_batches"), check: func(t *testing.T, c *Config) {
			b := c.QueueConfig.Get().Batch.Get()
			assert.Zero(t, b.MinSize)
			assert.EqualValues(t, 5000, b.MaxSize)
		}},
		{id: component.NewIDWithName(metadata.Type, "own_queue_batches"), check: func(t *testing.T, c *Config) {
			b := c.QueueConfig.Get().Batch.Get()
			assert.Equal(t, 5000, c.BatchSize)
			assert.Zero(t, b.MinSize)
			assert.EqualValues(t, 20000, b.MaxSize, "the queue's own max_size is kept")
		}},
		{id: component.NewIDWithName(metadata.Type, "invalid"), invalid: []error{errNoEndpoint, errBatchSize, errBadDatabase}},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = cfg.Validate()
			if tt.invalid != nil {
				for _, want := range tt.invalid {
					assert.ErrorIs(t, err, want)
				}
				return
			}
			require.NoError(t, err)
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
		{"largest batch size", func(c *Config) { c.BatchSize = maxBatchSize }, nil},
		{"database of 64 characters", func(c *Config) { c.Database = strings.Repeat("a", 64) }, nil},
		{"dashes and underscores", func(c *Config) { c.Database = "_team-a_prod" }, nil},
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, []error{errNoEndpoint}},
		{"zero batch size", func(c *Config) { c.BatchSize = 0 }, []error{errBatchSize}},
		{"negative batch size", func(c *Config) { c.BatchSize = -5 }, []error{errBatchSize}},
		{"batch size too large", func(c *Config) { c.BatchSize = maxBatchSize + 1 }, []error{errBatchSize}},
		{"empty database", func(c *Config) { c.Database = "" }, []error{errBadDatabase}},
		{"path traversal in database", func(c *Config) { c.Database = "../etc" }, []error{errBadDatabase}},
		{"slash in database", func(c *Config) { c.Database = "a/b" }, []error{errBadDatabase}},
		{"leading dash", func(c *Config) { c.Database = "-x" }, []error{errBadDatabase}},
		{"database of 65 characters", func(c *Config) { c.Database = strings.Repeat("a", 65) }, []error{errBadDatabase}},
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

func TestPersistentBatchingIsFlagged(t *testing.T) {
	for _, tt := range []struct {
		name  string
		queue map[string]any
		want  bool
	}{
		{"memory queue with its batcher", map[string]any{}, false},
		{"persistent queue: the batcher is off unless set", map[string]any{"storage": "file_storage"}, false},
		{"persistent queue with a batcher set", map[string]any{"storage": "file_storage", "batch": map[string]any{"flush_timeout": "1s"}}, true},
		{"persistent queue without batcher", map[string]any{"storage": "file_storage", "batch": map[string]any{"enabled": false}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			require.NoError(t, confmap.NewFromStringMap(map[string]any{"endpoint": "localhost:1", "sending_queue": tt.queue}).Unmarshal(cfg))
			assert.Equal(t, tt.want, persistentBatching(cfg))
		})
	}
}

// TestQueueDefaultsKeepTheDurablePromise: an OTLP success waits for the
// sidecar's durable ack unless the queue is persistent, where
// exporterhelper refuses wait_for_result and the batcher would break
// exactly once, so both are off unless set.
func TestQueueDefaultsKeepTheDurablePromise(t *testing.T) {
	for _, tt := range []struct {
		name      string
		queue     map[string]any
		wait      bool
		batch     bool
		wantValid bool
	}{
		{"default queue", nil, true, true, true},
		{"memory queue with other settings", map[string]any{"num_consumers": 4}, true, true, true},
		{"memory queue, wait turned off", map[string]any{"wait_for_result": false}, false, true, true},
		{"persistent queue", map[string]any{"storage": "file_storage"}, false, false, true},
		{"persistent queue with wait set", map[string]any{"storage": "file_storage", "wait_for_result": true}, true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			raw := map[string]any{"endpoint": "127.0.0.1:8815"}
			if tt.queue != nil {
				raw["sending_queue"] = tt.queue
			}
			require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
			require.True(t, cfg.QueueConfig.HasValue())
			q := cfg.QueueConfig.Get()
			assert.Equal(t, tt.wait, q.WaitForResult)
			assert.Equal(t, tt.batch, q.Batch.HasValue())
			err := errors.Join(cfg.Validate(), q.Validate())
			if tt.wantValid {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "wait_for_result")
			}
		})
	}
}

// TestTLSDefaultFollowsTheEndpoint: without tls settings a loopback
// endpoint is plaintext, as the sidecar listens there by default, and any
// other endpoint uses TLS; tls settings always win.
func TestTLSDefaultFollowsTheEndpoint(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		tls      map[string]any
		insecure bool
	}{
		{"", nil, true}, // the default endpoint, 127.0.0.1:8815
		{"127.0.0.1:8815", nil, true},
		{"127.0.0.2:9000", nil, true},
		{"localhost:8815", nil, true},
		{"LOCALHOST:8815", nil, true},
		{"[::1]:8815", nil, true},
		{"dns:///localhost:8815", nil, true},
		{"unix:///run/arcstore.sock", nil, true},
		{"arcstore:8815", nil, false},
		{"10.0.0.7:8815", nil, false},
		{"sidecar.internal:8815", nil, false},
		{"localhost.example.com:8815", nil, false},
		{"127.0.0.1:8815", map[string]any{"insecure": false}, false},
		{"127.0.0.1:8815", map[string]any{"ca_file": "ca.pem"}, false},
		{"arcstore:8815", map[string]any{"insecure": true}, true},
	} {
		t.Run(fmt.Sprintf("%s %v", tt.endpoint, tt.tls), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			raw := map[string]any{}
			if tt.endpoint != "" {
				raw["endpoint"] = tt.endpoint
			}
			if tt.tls != nil {
				raw["tls"] = tt.tls
			}
			require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
			assert.Equal(t, tt.insecure, cfg.TLS.Insecure)
		})
	}
}
