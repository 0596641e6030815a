// Package s3test starts a real S3-compatible server for tests: Versity's
// versitygw (installed into .tools by make tools) serving a bucket from a
// local directory on loopback, with SigV4 credentials.
package s3test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/arc-otel/arc-otel/internal/testserver"
)

// RequireEnv, set to 1 (make test sets it), makes a server that cannot
// start fail the test; otherwise the test is skipped and says why, so that
// `go test ./...` on a machine without the tools still runs the rest.
const RequireEnv = "ARC_REQUIRE_S3"

// BinEnv overrides where the versitygw binary is.
const BinEnv = "VERSITYGW_BIN"

// Credentials of the server's root account, and the region it signs for.
const (
	AccessKey = "arcstore-test"
	SecretKey = "arcstore-test-secret"
	Region    = "us-east-1"
	Bucket    = "arc"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string
	// Dir is the directory it serves: Dir/<bucket>/<key>.
	Dir string

	t    testing.TB
	addr string
	proc *testserver.Process
}

// Bin finds versitygw: $VERSITYGW_BIN, the repo's .tools, then PATH.
func Bin() (string, bool) {
	if p := os.Getenv(BinEnv); p != "" {
		return p, true
	}
	p := filepath.Join(testserver.RepoRoot(), ".tools", "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	p, err := exec.LookPath("versitygw")
	return p, err == nil
}

// Start runs a server with an empty bucket named Bucket for the test and
// stops it at cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, Dir: t.TempDir()}
	s.addr = testserver.LoopbackAddr(t)
	s.Endpoint = "http://" + s.addr
	s.start()
	t.Cleanup(s.Stop)
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(Bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return s
}

func (s *Server) start() {
	s.t.Helper()
	bin, ok := Bin()
	if !ok {
		s.cannotStart("versitygw not found (.tools/versitygw, $%s or PATH): run `make tools`", BinEnv)
	}
	// Loopback only; no admin port, web UI or IAM (single account mode).
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--port", s.addr, "posix", s.Dir)
	cmd.Env = os.Environ()
	proc, err := testserver.Start(cmd, filepath.Join(s.Dir, "..", "versitygw.log"), s.addr)
	if err != nil {
		s.cannotStart("%v", err)
	}
	s.proc = proc
}

func (s *Server) cannotStart(format string, args ...any) {
	s.t.Helper()
	testserver.CannotStart(s.t, RequireEnv, "S3 server", format, args...)
}

// Stop kills the server (an outage, or the end of the test). Its data stay.
func (s *Server) Stop() { s.proc.Stop() }

// Restart starts a stopped server again on the same address and data.
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
}

// Client is an S3 client of the server with the root credentials.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint), Region: Region, UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
}

// Objects lists the bucket: key → size.
func (s *Server) Objects() map[string]int64 {
	s.t.Helper()
	out := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			s.t.Fatalf("list bucket: %v", err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out
}

// Uploads lists the multipart uploads begun and neither completed nor
// aborted: key → count.
func (s *Server) Uploads() map[string]int {
	s.t.Helper()
	out := map[string]int{}
	res, err := s.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(Bucket)})
	if err != nil {
		s.t.Fatalf("list multipart uploads: %v", err)
	}
	for _, u := range res.Uploads {
		out[aws.ToString(u.Key)]++
	}
	return out
}

// Get reads an object.
func (s *Server) Get(key string) []byte {
	s.t.Helper()
	out, err := s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(Bucket), Key: aws.String(key)})
	if err != nil {
		s.t.Fatalf("get object %s: %v", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		s.t.Fatalf("read object %s: %v", key, err)
	}
	return data
}
