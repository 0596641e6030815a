package upload

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is S3's integrity check, not a security measure
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Config locates a bucket. Credentials come from the SDK's usual chain:
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, the shared config files
// (AWS_PROFILE), web identity, container and instance roles.
type S3Config struct {
	// Endpoint is the server's URL (http:// or https://, which decides
	// TLS); empty means AWS S3 itself.
	Endpoint string
	Bucket   string
	Region   string
	// PathStyle addresses the bucket as <endpoint>/<bucket>/<key> instead
	// of <bucket>.<endpoint>/<key> (MinIO, versitygw, most self-hosted
	// servers).
	PathStyle bool
	// Profile picks a profile of the shared config files.
	Profile string
	// TLS configures https endpoints (a private CA); nil uses the system's.
	TLS *tls.Config
}

// S3 is a Bucket on an S3-compatible server.
type S3 struct {
	client *s3.Client
	bucket string
}

// NewS3 builds the client. It does not call the server: Check does.
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	if c.Bucket == "" {
		return nil, errors.New("no bucket")
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("endpoint %q: want http://host[:port] or https://host[:port]", c.Endpoint)
		}
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(c.Region),
		// Content-MD5 on every body is the integrity check; the newer
		// default checksums (CRC32 headers, aws-chunked trailers) are not
		// understood by every S3-compatible server.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if c.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.Profile))
	}
	if c.TLS != nil {
		opts = append(opts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.TLSClientConfig = c.TLS
		})))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
	})
	return &S3{client: client, bucket: c.Bucket}, nil
}

func contentMD5(b []byte) *string {
	sum := md5.Sum(b) //nolint:gosec // see the import
	return aws.String(base64.StdEncoding.EncodeToString(sum[:]))
}

// Put implements Bucket.
func (b *S3) Put(ctx context.Context, key string, body []byte) (string, error) {
	out, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &b.bucket, Key: &key, Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentMD5: contentMD5(body),
	})
	if err != nil {
		return "", classify("put", key, err)
	}
	return aws.ToString(out.ETag), nil
}

// CreateMultipart implements Bucket.
func (b *S3) CreateMultipart(ctx context.Context, key string) (string, error) {
	out, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return "", classify("create multipart upload", key, err)
	}
	return aws.ToString(out.UploadId), nil
}

// UploadPart implements Bucket.
func (b *S3) UploadPart(ctx context.Context, key, uploadID string, n int32, body []byte) (string, error) {
	out, err := b.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &b.bucket, Key: &key, UploadId: &uploadID, PartNumber: aws.Int32(n), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentMD5: contentMD5(body),
	})
	if err != nil {
		return "", classify(fmt.Sprintf("upload part %d of", n), key, err)
	}
	return aws.ToString(out.ETag), nil
}

// CompleteMultipart implements Bucket.
func (b *S3) CompleteMultipart(ctx context.Context, key, uploadID string, etags []string) (string, error) {
	parts := make([]types.CompletedPart, len(etags))
	for i, e := range etags {
		parts[i] = types.CompletedPart{ETag: aws.String(e), PartNumber: aws.Int32(int32(i + 1))}
	}
	out, err := b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: &key, UploadId: &uploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return "", classify("complete multipart upload", key, err)
	}
	return aws.ToString(out.ETag), nil
}

// AbortMultipart implements Bucket.
func (b *S3) AbortMultipart(ctx context.Context, key, uploadID string) error {
	_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: &uploadID})
	var gone *types.NoSuchUpload
	if err == nil || errors.As(err, &gone) || apiCode(err) == "NoSuchUpload" {
		return nil
	}
	return classify("abort multipart upload", key, err)
}

// Head implements Bucket.
func (b *S3) Head(ctx context.Context, key string) (Object, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		if status(err) == http.StatusNotFound && apiCode(err) != "NoSuchBucket" {
			return Object{}, fmt.Errorf("head %s: %w", key, ErrNotFound)
		}
		return Object{}, classify("head", key, err)
	}
	return Object{Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

// Delete implements Bucket.
func (b *S3) Delete(ctx context.Context, key string) error {
	if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key}); err != nil {
		return classify("delete", key, err)
	}
	return nil
}

// Check implements Bucket.
func (b *S3) Check(ctx context.Context) error {
	_, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b.bucket})
	if err != nil && status(err) == http.StatusNotFound {
		return fmt.Errorf("bucket %s: %w", b.bucket, ErrNoBucket)
	}
	return classify("check bucket", b.bucket, err)
}

// classify wraps an SDK error with the Bucket error it amounts to.
func classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var kind error
	var signing *v4.SigningError
	code, st := apiCode(err), status(err)
	switch {
	case code == "NoSuchBucket":
		kind = ErrNoBucket
	case errors.As(err, &signing), st == http.StatusUnauthorized, st == http.StatusForbidden,
		code == "InvalidAccessKeyId", code == "SignatureDoesNotMatch", code == "AccessDenied", code == "ExpiredToken", code == "InvalidToken":
		kind = ErrCredentials
	case st >= 400 && st < 500 && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests:
		kind = ErrRefused
	default:
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	return fmt.Errorf("%s %s: %w: %w", op, key, kind, err)
}

func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Key is the object key of a file of a partition: the prefix, then the
// same path as under the data directory.
func Key(prefix, partition, file string) string {
	p := strings.Trim(prefix, "/")
	if p != "" {
		p += "/"
	}
	return p + partition + "/" + file
}
