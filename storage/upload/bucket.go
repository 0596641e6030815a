package upload

import (
	"context"
	"errors"
)

// Bucket is the object store the uploader writes to, keyed by full object
// keys. S3 (NewS3) is the implementation; tests wrap it to inject faults.
type Bucket interface {
	// Put stores body under key in one request; it returns the ETag.
	Put(ctx context.Context, key string, body []byte) (etag string, err error)
	// CreateMultipart begins a multipart upload; nothing is visible under
	// key until CompleteMultipart.
	CreateMultipart(ctx context.Context, key string) (uploadID string, err error)
	// UploadPart stores part n (from 1) of an upload; it returns its ETag.
	UploadPart(ctx context.Context, key, uploadID string, n int32, body []byte) (etag string, err error)
	// CompleteMultipart publishes the object from its parts' ETags, in order.
	CompleteMultipart(ctx context.Context, key, uploadID string, parts []string) (etag string, err error)
	// AbortMultipart discards an upload and its parts; an upload that is
	// gone already is not an error.
	AbortMultipart(ctx context.Context, key, uploadID string) error
	// Head describes the object at key, or returns ErrNotFound.
	Head(ctx context.Context, key string) (Object, error)
	// Delete removes the object at key; a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Check proves the bucket exists and the credentials are accepted.
	Check(ctx context.Context) error
}

// Object is what HEAD says of an object.
type Object struct {
	Size int64
	ETag string
}

// Errors of the bucket, as Bucket implementations classify them.
var (
	// ErrNotFound: no object under the key.
	ErrNotFound = errors.New("object not found")
	// ErrCredentials: the server refused the credentials or their rights
	// (the sidecar is not ready until they work).
	ErrCredentials = errors.New("object storage refused the credentials")
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("bucket does not exist")
	// ErrRefused: the server answered and refused this request (a 4xx
	// other than the above); the object is retried later.
	ErrRefused = errors.New("object storage refused the request")
)

// unready says whether err makes the sidecar not ready: no upload can
// succeed until an operator acts.
func unready(err error) bool { return errors.Is(err, ErrCredentials) || errors.Is(err, ErrNoBucket) }
