// Package upload copies the sidecar's Parquet partitions to an
// S3-compatible bucket under the same layout
// (<prefix>/<db>/<table>/date=YYYY-MM-DD/hour=H/<file>.parquet), exactly
// once.
//
// The unit is a partition once it is closed and compacted: its hour ended
// and a compaction run covered it (or it ended -compact-min-age ago), and
// it holds one file per schema, so nothing will merge it again. The
// uploader is its own component: it reads the partition tree, learns of
// compaction runs from the store's Observer, and keeps a manifest per
// partition under _arcstore/uploads/ naming the objects verified in the
// bucket and the multipart uploads begun.
//
// Exactly once across crashes rests on three facts. An object appears
// under its final name only whole (PutObject and CompleteMultipartUpload
// are atomic). Uploading the same key with the same bytes again changes
// nothing, so a file whose upload a crash cut off before the manifest
// recorded it is simply uploaded again. A multipart upload is recorded
// before its first part and aborted on the next start if it did not
// complete, so no parts are left behind. Late rows that reach an uploaded
// hour are compacted with its file into a new one; the uploader uploads the
// new file, then deletes the object it replaces (a reader listing between
// the two steps sees the old rows twice).
//
// With LocalRetention (or Retention: the sidecar's -retention, which
// waits for the bucket the same way) a partition is deleted locally only
// once every one of its files is verified in the bucket (HEAD: size and
// ETag as uploaded), through the store, which refuses if a file appeared
// meanwhile. The
// deletion's token is recorded first and the store keeps a tombstone of
// it: after a crash, a partition deleted and refilled by late rows and one
// not deleted but compacted both lack the recorded files, and only the
// tombstone tells which (keep the objects, or replace them).
package upload
