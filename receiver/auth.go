package receiver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Tokens is the set of bearer tokens the sidecar accepts. An empty set
// means authentication is off.
type Tokens struct {
	hashes [][sha256.Size]byte
}

// ErrNoTokens reports a token source that holds no token.
var ErrNoTokens = errors.New("no tokens")

// LoadTokens reads tokens, one per line (blank lines and lines starting with
// # are skipped), from file when it is set, and from env, a comma-separated
// list, when that is set.
func LoadTokens(file, env string) (*Tokens, error) {
	var raw []string
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read token file: %w", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				raw = append(raw, line)
			}
		}
		if len(raw) == 0 {
			return nil, fmt.Errorf("token file %s: %w", file, ErrNoTokens)
		}
	}
	for _, tok := range strings.Split(env, ",") {
		if tok = strings.TrimSpace(tok); tok != "" {
			raw = append(raw, tok)
		}
	}
	t := &Tokens{}
	for _, tok := range raw {
		t.hashes = append(t.hashes, sha256.Sum256([]byte(tok)))
	}
	return t, nil
}

// Enabled reports whether requests must carry a token.
func (t *Tokens) Enabled() bool { return t != nil && len(t.hashes) > 0 }

// valid compares in constant time: hashing first makes the comparison
// independent of the token's length, and every configured token is compared.
func (t *Tokens) valid(authorization string) bool {
	tok, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return false
	}
	return t.validToken(tok)
}

func (t *Tokens) validToken(tok string) bool {
	h := sha256.Sum256([]byte(tok))
	match := 0
	for _, want := range t.hashes {
		match |= subtle.ConstantTimeCompare(h[:], want[:])
	}
	return match == 1
}

func (t *Tokens) checkContext(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if t.valid(v) {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "missing or invalid bearer token (send \"authorization: Bearer <token>\")")
}

// StreamInterceptor refuses streams without a valid token.
func (t *Tokens) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if t.Enabled() {
			if err := t.checkContext(ss.Context()); err != nil {
				return err
			}
		}
		return handler(srv, ss)
	}
}

// UnaryInterceptor refuses calls without a valid token.
func (t *Tokens) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if t.Enabled() {
			if err := t.checkContext(ctx); err != nil {
				return nil, err
			}
		}
		return handler(ctx, req)
	}
}

// RequireHTTP wraps a handler that needs a valid token.
func (t *Tokens) RequireHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.Enabled() && !t.valid(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="arcstore"`)
			http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// tokenFromHeader is the token of an "Authorization: <scheme> <token>"
// header, when scheme is one of schemes.
func tokenFromHeader(auth string, schemes ...string) (string, bool) {
	for _, s := range schemes {
		if tok, ok := strings.CutPrefix(auth, s+" "); ok {
			return tok, true
		}
	}
	return "", false
}

// validFor accepts a token the ways the clients of one dialect send it,
// and no other: a token in a URL lands in access logs and proxies, so it
// is taken only where clients have no other way.
//   - Arc (/api/v1/write/line-protocol): "Authorization: Bearer", what
//     Arc's SDK sends, as on the MessagePack endpoint.
//   - InfluxDB 2.x (/api/v2/write): "Authorization: Token" (InfluxDB 2.x
//     clients, Telegraf's influxdb_v2 output) or "Bearer" (InfluxDB 3
//     clients).
//   - InfluxDB 1.x (/write): those two, HTTP basic auth or the p query
//     parameter (Telegraf's influxdb output, 1.x client libraries; the
//     password is the token and the user name is not checked).
func (t *Tokens) validFor(r *http.Request, d Dialect) bool {
	auth := r.Header.Get("Authorization")
	switch d {
	case DialectArc:
		return t.valid(auth)
	case DialectInfluxV2:
		tok, ok := tokenFromHeader(auth, "Token", "Bearer")
		return ok && t.validToken(tok)
	}
	if tok, ok := tokenFromHeader(auth, "Token", "Bearer"); ok {
		return t.validToken(tok)
	}
	if _, pass, ok := r.BasicAuth(); ok {
		return t.validToken(pass)
	}
	if auth != "" {
		return false
	}
	if p := r.URL.Query().Get("p"); p != "" {
		return t.validToken(p)
	}
	return false
}

// authHint says how a dialect's clients send their token, for the 401.
func authHint(d Dialect) string {
	switch d {
	case DialectArc:
		return `send "Authorization: Bearer <token>"`
	case DialectInfluxV2:
		return `send "Authorization: Token <token>" or "Bearer <token>"`
	}
	return `send "Authorization: Token <token>", "Bearer <token>", basic auth or ?p=<token>`
}
