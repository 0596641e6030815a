package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestBearerTokenEndToEnd runs the sidecar with a token from the
// environment: a collector that sends it through the exporter's headers
// setting gets its data stored; one that does not is refused, the
// collector counts the refusal as a failed send instead of retrying forever,
// and, since an OTLP answer waits for the sidecar's, the OTLP client is told.
func TestBearerTokenEndToEnd(t *testing.T) {
	t.Setenv("ARCSTORE_AUTH_TOKENS", "e2e-s3cret")
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-flush-interval", "1s")

	good := startCollectorWith(t, sc.grpc, "    headers: {authorization: \"Bearer e2e-s3cret\"}")
	telemetrygen(t, good.otlpGRPC, "logs", "--logs", "100", "--workers", "1")
	accepted := good.waitDrained(t, 60*time.Second)

	bad := startCollector(t, sc.grpc)
	out, err := runTelemetrygen(t, bad.otlpGRPC, "logs", "--logs", "50", "--workers", "1")
	assert.Error(t, err, "the OTLP client must learn that its logs were refused")
	assert.Contains(t, string(out), "Unauthenticated")
	deadline := time.Now().Add(30 * time.Second)
	for bad.metric(t, "otelcol_exporter_send_failed_log_records", `exporter="arc"`) < 50 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	assert.EqualValues(t, 50, bad.metric(t, "otelcol_exporter_send_failed_log_records", `exporter="arc"`))

	sc.stop(t, 30*time.Second)
	s := &stack{sidecar: sc}
	assert.EqualValues(t, accepted["log_records"], s.count(t, "logs"))
	assert.EqualValues(t, 100, s.count(t, "logs"))
}
