package receiver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

func TestLoadTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# ops\nalpha\n\n  beta  \n"), 0o600))
	tok, err := LoadTokens(file, "gamma, ")
	require.NoError(t, err)
	for _, tt := range []struct {
		header string
		ok     bool
	}{
		{"Bearer alpha", true}, {"Bearer beta", true}, {"Bearer gamma", true},
		{"Bearer delta", false}, {"alpha", false}, {"Bearer ", false}, {"", false}, {"Basic alpha", false},
	} {
		assert.Equal(t, tt.ok, tok.valid(tt.header), tt.header)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("# nothing\n"), 0o600))
	_, err = LoadTokens(empty, "")
	assert.ErrorIs(t, err, ErrNoTokens)
	off, err := LoadTokens("", "")
	require.NoError(t, err)
	assert.False(t, off.Enabled())
}

// serve starts a Flight server with the given tokens and transport.
func serve(t *testing.T, tokens *Tokens, creds credentials.TransportCredentials) (string, *storage.Store) {
	t.Helper()
	store, err := storage.Open(storage.Options{DataDir: t.TempDir(), Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	opts := append(ServerOptions(), grpc.ChainStreamInterceptor(tokens.StreamInterceptor()))
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	gs := grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(gs, &FlightServer{Store: store, Log: quiet, Mem: memory.DefaultAllocator})
	go gs.Serve(lis)
	t.Cleanup(func() {
		gs.Stop()
		require.NoError(t, store.Close())
	})
	return lis.Addr().String(), store
}

func putOne(t *testing.T, conn *grpc.ClientConn, ctx context.Context) error {
	f := &fixture{client: flight.NewClientFromConn(conn, nil)}
	rec, _ := storagetest.LogBatch(t, "a", t0)
	defer rec.Release()
	stream, err := f.client.DoPut(ctx)
	if err != nil {
		return err
	}
	w := flight.NewRecordWriter(stream)
	w.SetFlightDescriptor(arcflight.Descriptor("default", "logs"))
	_ = w.Write(rec)
	_ = w.Close()
	_ = stream.CloseSend()
	_, err = readAcks(stream)
	return err
}

func TestBearerTokenOnFlight(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	addr, store := serve(t, tokens, nil)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	for _, tt := range []struct {
		name   string
		header string
		code   codes.Code
	}{
		{"no token", "", codes.Unauthenticated},
		{"wrong token", "Bearer guess", codes.Unauthenticated},
		{"valid token", "Bearer s3cret", codes.OK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := store.Buffered()
			ctx := context.Background()
			if tt.header != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", tt.header)
			}
			err := putOne(t, conn, ctx)
			assert.Equal(t, tt.code, status.Code(err), "%v", err)
			if tt.code != codes.OK {
				assert.Equal(t, before, store.Buffered(), "nothing stored without a valid token")
			}
		})
	}
}

func TestRequireHTTP(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	h := tokens.RequireHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for header, want := range map[string]int{"": 401, "Bearer nope": 401, "Bearer s3cret": 204} {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/write/msgpack", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, header)
	}
}

func TestTLSOnFlight(t *testing.T) {
	cert, pool := selfSigned(t)
	addr, _ := serve(t, &Tokens{}, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "localhost"})))
	require.NoError(t, err)
	defer conn.Close()
	assert.NoError(t, putOne(t, conn, context.Background()))

	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer plain.Close()
	assert.Error(t, putOne(t, plain, context.Background()), "plaintext client against a TLS listener")
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// TestTokenSchemesByEndpoint: each write endpoint takes a token the ways
// its clients send one and no other. Credentials in the URL (?p=) and
// basic auth are InfluxDB 1.x's, so only /write takes them; the Arc
// endpoints take Arc's SDK's bearer token.
func TestTokenSchemesByEndpoint(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	f := newWriteFixture(t, tokens, 0, 0, 0)
	line := []byte(fmt.Sprintf("cpu v=1 %d\n", lpNow.UnixNano()))
	bearer := map[string]string{"Authorization": "Bearer s3cret"}
	token := map[string]string{"Authorization": "Token s3cret"}
	basicAuth := map[string]string{"Authorization": "Basic " + basic("me", "s3cret")}
	tests := []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{"arc bearer", PathWriteLineProtocol, bearer, http.StatusNoContent},
		{"arc token", PathWriteLineProtocol, token, http.StatusUnauthorized},
		{"arc basic", PathWriteLineProtocol, basicAuth, http.StatusUnauthorized},
		{"arc p", PathWriteLineProtocol + "?p=s3cret", nil, http.StatusUnauthorized},
		{"v2 token", PathWriteInfluxV2 + "?bucket=b", token, http.StatusNoContent},
		{"v2 bearer", PathWriteInfluxV2 + "?bucket=b", bearer, http.StatusNoContent},
		{"v2 basic", PathWriteInfluxV2 + "?bucket=b", basicAuth, http.StatusUnauthorized},
		{"v2 p", PathWriteInfluxV2 + "?bucket=b&u=me&p=s3cret", nil, http.StatusUnauthorized},
		{"v1 token", PathWriteInfluxV1 + "?db=d", token, http.StatusNoContent},
		{"v1 bearer", PathWriteInfluxV1 + "?db=d", bearer, http.StatusNoContent},
		{"v1 basic", PathWriteInfluxV1 + "?db=d", basicAuth, http.StatusNoContent},
		{"v1 p", PathWriteInfluxV1 + "?db=d&u=me&p=s3cret", nil, http.StatusNoContent},
		{"v1 wrong scheme beside a good p", PathWriteInfluxV1 + "?db=d&p=s3cret", map[string]string{"Authorization": "Key s3cret"}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.send(t, tt.path, line, tt.header)
			assert.Equal(t, tt.want, a.status, "%v", a.body)
		})
	}
	a := f.send(t, PathWriteLineProtocol+"?p=s3cret", line, nil)
	assert.Equal(t, `missing or invalid token (send "Authorization: Bearer <token>")`, a.body["error"])
	a = f.send(t, PathWriteInfluxV2+"?bucket=b&p=s3cret", line, nil)
	assert.Equal(t, `missing or invalid token (send "Authorization: Token <token>" or "Bearer <token>")`, a.body["message"])
	assert.Equal(t, map[string]int64{"default/cpu": 1, "b/cpu": 2, "d/cpu": 4}, f.rows(t))
}
