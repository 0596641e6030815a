package upload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/layout"
)

// Config configures an Uploader. Zero values take the defaults below.
type Config struct {
	Bucket Bucket
	// BucketName names the bucket in logs.
	BucketName string
	// Prefix goes before every key: <prefix>/<db>/<table>/date=.../hour=.../<file>.
	Prefix string
	// CompactMinAge is the store's: a partition whose hour ended this long
	// ago has been through a scheduled compaction.
	CompactMinAge time.Duration
	// LocalRetention deletes a local partition once its hour ended this
	// long ago and every file of it is verified in the bucket; 0 keeps
	// everything.
	LocalRetention time.Duration
	// Retention is the sidecar's -retention when a bucket is configured:
	// the uploader applies it, as it does LocalRetention, only to
	// partitions verified in the bucket (the store's own would delete
	// what is not uploaded yet). The shorter of the two applies.
	Retention storage.Retention
	// Interval is how often the partition tree is scanned (a compaction
	// run also starts a scan).
	Interval time.Duration
	// PartSize is the size of multipart upload parts; smaller files go in
	// one PutObject. At least 5 MiB (S3's smallest part).
	PartSize int64
	// Concurrency is how many parts of a file are in flight at once; each
	// holds a PartSize buffer (2 x 16 MiB by default: the sidecar's memory
	// budget is 512 MiB).
	Concurrency int
	// Timeout bounds each request to the bucket.
	Timeout time.Duration
	// MaxBackoff bounds the wait before retrying after a failure.
	MaxBackoff time.Duration
	// Table, if set, is settled before an object or a local partition is
	// deleted (Iceberg tables over the bucket).
	Table  Table
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultInterval    = 30 * time.Second
	DefaultPartSize    = 16 << 20
	MinPartSize        = 5 << 20
	DefaultConcurrency = 2
	DefaultTimeout     = 5 * time.Minute
	DefaultMaxBackoff  = 30 * time.Second
	maxParts           = 10000 // S3's limit per multipart upload
	abortTimeout       = 10 * time.Second
)

// Partitions is the store as the uploader sees it (*storage.Store).
type Partitions interface {
	DataDir() string
	DropPartition(rel string, files []string, token string) (bool, error)
	Drops() ([]string, error)
	ForgetDrop(token string) error
}

// Uploader copies closed, compacted partitions to the bucket.
type Uploader struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	store         Partitions
	mf            manifests
	compactedPath string
	manifests     map[string]*manifest // owned by the loop
	backoff       map[string]retry     // partitions the bucket refused, by rel
	failures      int                  // passes in a row cut short by an error

	mu               sync.Mutex
	compactedThrough time.Time
	compactedDirty   bool
	notReady         error

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	next   storage.Observer // told of the partitions Retention deleted

	now  func() time.Time
	hook func(step string) error // tests crash the uploader here
	fs   layout.DirReader        // lists the partition tree
}

type retry struct {
	n     int
	until time.Time
}

// New checks the settings. Start begins uploading.
func New(cfg Config) (*Uploader, error) {
	if cfg.Bucket == nil {
		return nil, errors.New("upload: no bucket")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.PartSize < MinPartSize {
		return nil, fmt.Errorf("upload: part size %d is under S3's smallest part, %d", cfg.PartSize, MinPartSize)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.LocalRetention < 0 {
		return nil, errors.New("upload: negative local retention")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Uploader{
		cfg: cfg, log: cfg.Logger.With("bucket", cfg.BucketName), metrics: newMetrics(),
		backoff: map[string]retry{}, wake: make(chan struct{}, 1), now: time.Now, fs: layout.OSFS{},
	}, nil
}

// Config returns the settings, defaults filled in.
func (u *Uploader) Config() Config { return u.cfg }

// Observe returns an Observer that passes every event to next and starts
// a scan when a compaction run ends: the partitions it covered are ready.
func (u *Uploader) Observe(next storage.Observer) storage.Observer {
	u.next = next
	return observer{Observer: next, u: u}
}

type observer struct {
	storage.Observer
	u *Uploader
}

func (o observer) Compacted(st storage.CompactStats) {
	if o.Observer != nil {
		o.Observer.Compacted(st)
	}
	o.u.compacted(st)
}

func (o observer) Committed(c storage.Commit) {
	if o.Observer != nil {
		o.Observer.Committed(c)
	}
}

func (o observer) Flushed(f storage.Flush) {
	if o.Observer != nil {
		o.Observer.Flushed(f)
	}
}

func (o observer) Deduplicated(d storage.Duplicate) {
	if o.Observer != nil {
		o.Observer.Deduplicated(d)
	}
}

func (o observer) Retired(n int) {
	if o.Observer != nil {
		o.Observer.Retired(n)
	}
}

func (o observer) SinkWrote(w storage.SinkWritten) {
	if o.Observer != nil {
		o.Observer.SinkWrote(w)
	}
}

// compacted records a compaction run's cutoff (in line with the
// compactor: quick) and wakes the loop.
func (u *Uploader) compacted(st storage.CompactStats) {
	if st.Err != nil || st.Cutoff.IsZero() {
		return
	}
	u.mu.Lock()
	if st.Cutoff.After(u.compactedThrough) {
		u.compactedThrough, u.compactedDirty = st.Cutoff, true
	}
	u.mu.Unlock()
	u.Wake()
}

// Wake starts a scan now.
func (u *Uploader) Wake() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Check asks the bucket whether it exists and takes the credentials; its
// answer is what Ready says until a later request succeeds or fails so.
func (u *Uploader) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	err := u.cfg.Bucket.Check(ctx)
	u.observe(err)
	return err
}

// Ready is nil unless the bucket refused the credentials or does not
// exist: then it is that error, for /ready.
func (u *Uploader) Ready() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.notReady
}

// observe keeps the readiness up to date with each answer of the bucket.
func (u *Uploader) observe(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case err == nil:
		u.notReady = nil
	case unready(err):
		u.notReady = err
	default:
		return // a network error or a refused object says nothing of the credentials
	}
	if u.notReady == nil {
		u.metrics.ready.Set(1)
	} else {
		u.metrics.ready.Set(0)
	}
}

// load reads the uploader's state from the data directory.
func (u *Uploader) load(store Partitions) error {
	u.store = store
	dir := filepath.Join(storage.SystemDir(store.DataDir()), stateDirName)
	u.mf = manifests{dir: filepath.Join(dir, manifestsDirName)}
	u.compactedPath = filepath.Join(dir, compactedFileName)
	if err := layout.MkdirDurable(u.mf.fsys(), u.mf.dir); err != nil {
		return fmt.Errorf("create upload state dir: %w", err)
	}
	ms, err := u.mf.load()
	if err != nil {
		return err
	}
	through, err := loadCompacted(u.compactedPath)
	if err != nil {
		return err
	}
	u.manifests = ms
	u.mu.Lock()
	if through.After(u.compactedThrough) {
		u.compactedThrough = through
	}
	u.mu.Unlock()
	return nil
}

// Start loads the manifests and uploads in the background until Stop.
func (u *Uploader) Start(store Partitions) error {
	if err := u.load(store); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel, u.done = cancel, make(chan struct{})
	go u.run(ctx)
	return nil
}

// Stop ends the uploads: one in flight is abandoned (a multipart upload
// aborted) and starts again on the next start. Call it before closing
// the store.
func (u *Uploader) Stop() {
	if u.cancel == nil {
		return
	}
	u.cancel()
	<-u.done
}

func (u *Uploader) run(ctx context.Context) {
	defer close(u.done)
	for {
		wait, err := u.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			u.log.Warn("upload pass stopped; the local partitions are kept and retried", "retry_in", wait, "error", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-u.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// pass brings the bucket up to date with the closed partitions once and
// says how long to wait before the next pass. It stops at the first error
// that is not one object's refusal: the rest would meet it too.
func (u *Uploader) pass(ctx context.Context) (time.Duration, error) {
	now := u.now()
	wait, err := u.passErr(ctx, now)
	if err != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, errUnreadable) {
		u.failures++
		return u.backoffFor(u.failures), err
	}
	u.failures = 0
	for _, r := range u.backoff {
		if d := r.until.Sub(now); d < wait {
			wait = max(d, 0)
		}
	}
	return wait, err
}

func (u *Uploader) backoffFor(n int) time.Duration {
	d := time.Second << min(n-1, 16)
	return min(d, u.cfg.MaxBackoff)
}

func (u *Uploader) passErr(ctx context.Context, now time.Time) (time.Duration, error) {
	if u.Ready() != nil {
		if err := u.Check(ctx); err != nil {
			return 0, err
		}
	}
	u.mu.Lock()
	through, dirty := u.compactedThrough, u.compactedDirty
	u.compactedDirty = false
	u.mu.Unlock()
	if dirty {
		if err := saveCompacted(u.compactedPath, through); err != nil {
			u.mu.Lock()
			u.compactedDirty = true
			u.mu.Unlock()
			return 0, fmt.Errorf("save compaction cutoff: %w", err)
		}
	}
	if err := u.abortPending(ctx); err != nil {
		return 0, err
	}
	parts, err := listPartitions(u.fs, u.store.DataDir())
	if err != nil {
		return 0, err
	}
	local := map[string]*localPartition{}
	for _, p := range parts {
		local[p.rel] = p
	}
	if err := u.settleDrops(local); err != nil {
		return 0, err
	}
	for rel := range u.manifests {
		// A folder that is there but lists no file is a compaction's swap
		// seen half-way (the old folder emptied as it was read), not a
		// deletion: forgetting its objects would leave them in the bucket
		// beside the merged file's, the rows twice.
		if local[rel] == nil {
			// Deleted (local retention, retention): the bucket keeps it.
			if err := u.mf.remove(rel); err != nil {
				return 0, err
			}
			delete(u.manifests, rel)
		}
	}
	cutoff := now.Add(-u.cfg.CompactMinAge)
	if through.After(cutoff) {
		cutoff = through
	}
	u.measureBacklog(parts, cutoff)
	var refused error
	for _, p := range parts {
		if p.end.After(cutoff) {
			break // sorted by hour: the rest are open too
		}
		if len(p.files) == 0 {
			continue // nothing to upload, and no file said which objects to keep (or the listing was unsettled)
		}
		if r, ok := u.backoff[p.rel]; ok && now.Before(r.until) {
			continue
		}
		err := u.partition(ctx, p, now)
		u.observe(err)
		if err == nil {
			delete(u.backoff, p.rel)
			continue
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if errors.Is(err, errTableBehind) {
			u.log.Warn("the table over the bucket is behind; the partition's old objects and local files are kept until it commits", "partition", p.rel, "error", err)
			continue
		}
		unreadable := errors.Is(err, errUnreadable)
		if !errors.Is(err, ErrRefused) && !unreadable {
			return 0, err
		}
		r := u.backoff[p.rel]
		r.n++
		r.until = now.Add(u.backoffFor(r.n))
		u.backoff[p.rel] = r
		msg := "the bucket refused an object; the partition stays local and is retried"
		if unreadable {
			msg = "a file of the partition cannot be read; the partition stays local and is retried"
		}
		u.log.Error(msg, "partition", p.rel, "retry_in", r.until.Sub(now), "error", err)
		refused = errors.Join(refused, err)
	}
	if parts, err = listPartitions(u.fs, u.store.DataDir()); err == nil {
		u.measureBacklog(parts, cutoff)
	}
	return u.cfg.Interval, refused
}

// abortPending aborts the multipart uploads a crash or a failure cut off.
// Their records stay (without the upload id): the upload may have
// completed, and partition resolves that.
func (u *Uploader) abortPending(ctx context.Context) error {
	for _, m := range u.manifests {
		for i := range m.Pending {
			p := &m.Pending[i]
			if p.UploadID == "" {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
			err := u.cfg.Bucket.AbortMultipart(rctx, p.Key, p.UploadID)
			cancel()
			if err != nil {
				return fmt.Errorf("abort an interrupted upload: %w", err)
			}
			u.metrics.aborted.Inc()
			u.log.Info("aborted an interrupted multipart upload", "key", p.Key)
			p.UploadID = ""
			if err := u.mf.save(m); err != nil {
				return err
			}
		}
		if len(m.Objects) == 0 && len(m.Pending) == 0 && m.Drop == "" && !m.Dropping {
			delete(u.manifests, m.Partition)
		}
	}
	return nil
}

// settleDrops finishes the local deletions a crash or a failure
// interrupted, then forgets the store's tombstones, which no manifest
// needs once settled. A partition the store did drop starts afresh: what
// it holds now arrived since (late rows, maybe compacted), and the bucket
// keeps the dropped files' objects. One it did not drop is as it was, or
// compacted since: the normal path uploads its files and deletes the
// objects of those a compaction replaced.
func (u *Uploader) settleDrops(local map[string]*localPartition) error {
	tombs, err := u.store.Drops()
	if err != nil {
		return err
	}
	for rel, m := range u.manifests {
		var dropped bool
		switch {
		case m.Drop != "":
			dropped = slices.Contains(tombs, m.Drop)
		case m.Dropping:
			if p := local[rel]; p != nil && p.unsettled {
				continue // told by its files: on a pass that lists them
			}
			dropped = droppedBefore(m, local[rel])
		default:
			continue
		}
		if dropped {
			if err := u.mf.remove(rel); err != nil {
				return err
			}
			delete(u.manifests, rel)
			u.log.Info("an interrupted local deletion had happened", "partition", rel)
			continue
		}
		m.Drop, m.Dropping = "", false
		if err := u.mf.save(m); err != nil {
			return err
		}
	}
	for _, t := range tombs {
		if err := u.store.ForgetDrop(t); err != nil {
			return err
		}
	}
	return nil
}

// droppedBefore settles a drop a sidecar without drop tokens began: only
// the files can say, and a partition without any of the recorded files is
// taken as dropped. That keeps the objects: should a compaction have
// merged the files instead, rows are in the bucket twice, never missing.
func droppedBefore(m *manifest, p *localPartition) bool {
	if p == nil {
		return true
	}
	for _, o := range m.Objects {
		if _, ok := p.file(o.File); ok {
			return false
		}
	}
	return true
}

// measureBacklog sets the gauges: closed partitions with files the bucket
// lacks, and their bytes.
func (u *Uploader) measureBacklog(parts []*localPartition, cutoff time.Time) {
	var n int
	var bytes int64
	for _, p := range parts {
		if p.end.After(cutoff) {
			break
		}
		m := u.manifests[p.rel]
		behind := false
		for _, f := range p.files {
			if m != nil {
				if o, ok := m.object(f.name); ok && o.Size == f.size {
					continue
				}
			}
			behind = true
			bytes += f.size
		}
		if behind {
			n++
		}
	}
	u.metrics.backlogPartitions.Set(float64(n))
	u.metrics.backlogBytes.Set(float64(bytes))
}

// partition brings one closed partition's objects up to date: uploads its
// files the bucket lacks, deletes the objects of files a compaction
// replaced, and applies local retention.
func (u *Uploader) partition(ctx context.Context, p *localPartition, now time.Time) error {
	m := u.manifests[p.rel]
	if m == nil {
		m = &manifest{Partition: p.rel}
	}
	var todo []localFile
	for _, f := range p.files {
		if o, ok := m.object(f.name); !ok || o.Size != f.size {
			todo = append(todo, f)
		}
	}
	dir := filepath.Join(u.store.DataDir(), filepath.FromSlash(p.rel))
	if len(todo) > 0 {
		ok, err := compacted(dir, p.files)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				u.Wake() // a compaction swapped the partition meanwhile
				return nil
			}
			return fmt.Errorf("%w: read schemas of %s: %w", errUnreadable, p.rel, err)
		}
		if !ok {
			return nil // late files: the next compaction merges them
		}
	}
	for _, f := range todo {
		o, err := u.uploadFile(ctx, m, dir, f)
		if errors.Is(err, os.ErrNotExist) {
			u.Wake()
			return nil
		}
		if err != nil {
			return err
		}
		m.Objects = slices.DeleteFunc(m.Objects, func(x object) bool { return x.File == o.File })
		m.Objects = append(m.Objects, o)
		m.Pending = slices.DeleteFunc(m.Pending, func(x pending) bool { return x.Key == o.Key })
		if err := u.mf.save(m); err != nil {
			return err
		}
		u.manifests[p.rel] = m
		if err := u.step("recorded"); err != nil {
			return err
		}
	}
	// Every local file is in the bucket now: objects of files that are
	// not local any more were merged into one of them. (Also when nothing
	// was uploaded in this pass: a crash may have come between the upload
	// of the new file and the deletion of the old object.)
	if err := u.dropReplaced(ctx, m, p); err != nil {
		return err
	}
	if age, byRetention, ok := u.localAge(p.rel); ok && !p.end.After(now.Add(-age)) && len(m.Objects) > 0 && len(m.Pending) == 0 {
		return u.dropLocal(ctx, m, p, byRetention)
	}
	return nil
}

// localAge is how long after its hour ended a partition verified in the
// bucket is deleted locally: the shorter of LocalRetention and its table's
// Retention, and whether that is the Retention; ok is false when neither
// applies.
func (u *Uploader) localAge(rel string) (age time.Duration, byRetention, ok bool) {
	age, ok = u.cfg.LocalRetention, u.cfg.LocalRetention > 0
	db, rest, _ := strings.Cut(rel, "/")
	table, _, _ := strings.Cut(rest, "/")
	if r, found := u.cfg.Retention.For(db, table); found && (!ok || r <= age) {
		return r, true, true
	}
	return age, false, ok
}

// dropReplaced deletes from the bucket the objects of files that are no
// longer in the partition: a compaction merged them into a file that is
// now uploaded. So too the objects pending uploads may have left of such
// files (every local file is recorded now, so every pending upload left is
// of one).
func (u *Uploader) dropReplaced(ctx context.Context, m *manifest, p *localPartition) error {
	live, gone := split(m, p)
	if len(gone) > 0 {
		if err := u.settle(ctx, m, live, gone); err != nil {
			return err
		}
	}
	for _, o := range gone {
		if err := u.delete(ctx, o.Key); err != nil {
			return err
		}
		m.Objects = slices.DeleteFunc(m.Objects, func(x object) bool { return x.Key == o.Key })
		if err := u.mf.save(m); err != nil {
			return err
		}
		u.metrics.replaced.Inc()
		u.log.Info("deleted an object a compaction replaced", "key", o.Key)
	}
	for _, pu := range slices.Clone(m.Pending) {
		if _, ok := p.file(pu.file()); ok || pu.UploadID != "" {
			continue // uploaded again, or to abort first (the next pass)
		}
		if err := u.delete(ctx, pu.Key); err != nil {
			return err
		}
		m.Pending = slices.DeleteFunc(m.Pending, func(x pending) bool { return x.Key == pu.Key })
		if err := u.mf.save(m); err != nil {
			return err
		}
		u.log.Info("deleted what an interrupted upload may have left of a file a compaction replaced", "key", pu.Key)
	}
	return nil
}

func (u *Uploader) delete(ctx context.Context, key string) error {
	rctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	err := u.cfg.Bucket.Delete(rctx, key)
	cancel()
	if err != nil {
		return fmt.Errorf("delete replaced object: %w", err)
	}
	return u.step("replaced")
}

// dropLocal deletes a partition whose every file is verified in the
// bucket. The drop's token is recorded first: see settleDrops.
func (u *Uploader) dropLocal(ctx context.Context, m *manifest, p *localPartition, byRetention bool) error {
	for _, f := range p.files {
		o, ok := m.object(f.name)
		if !ok {
			return nil
		}
		if err := u.verify(ctx, o); err != nil {
			if errors.Is(err, ErrNotFound) || errors.Is(err, errMismatch) {
				// Gone from the bucket (a lifecycle rule, a hand): upload it again.
				u.log.Warn("an uploaded object is no longer as uploaded; uploading it again", "key", o.Key, "error", err)
				m.Objects = slices.DeleteFunc(m.Objects, func(x object) bool { return x.Key == o.Key })
				if err := u.mf.save(m); err != nil {
					return err
				}
				u.Wake()
				return nil
			}
			return err
		}
	}
	if err := u.settle(ctx, m, m.Objects, nil); err != nil {
		return err
	}
	var token [12]byte
	_, _ = rand.Read(token[:])
	m.Drop, m.Dropping = hex.EncodeToString(token[:]), true
	if err := u.mf.save(m); err != nil {
		return err
	}
	if err := u.step("dropping"); err != nil {
		return err
	}
	dropped, err := u.store.DropPartition(p.rel, p.names(), m.Drop)
	if err != nil {
		return fmt.Errorf("delete local partition: %w", err) // the next pass settles it
	}
	if err := u.step("dropped"); err != nil {
		return err
	}
	if !dropped {
		m.Drop, m.Dropping = "", false // a file arrived since the listing
		return u.mf.save(m)
	}
	delete(u.manifests, p.rel)
	if err := u.mf.remove(p.rel); err != nil {
		return err
	}
	if err := u.step("unrecorded"); err != nil {
		return err
	}
	if err := u.store.ForgetDrop(m.Drop); err != nil {
		return err
	}
	u.metrics.localDeleted.Inc()
	if byRetention && u.next != nil {
		u.next.Retired(1)
	}
	u.log.Info("deleted a local partition verified in the bucket", "partition", p.rel, "files", len(p.files), "by_retention", byRetention)
	return nil
}

var (
	errMismatch    = errors.New("object differs from the upload")
	errTableBehind = errors.New("table not settled")
	// errUnreadable: a file of one partition cannot be read (a damaged
	// file): that partition waits, the others go on.
	errUnreadable = errors.New("local file unreadable")
)

// verify checks an object is in the bucket as uploaded: same size and ETag.
func (u *Uploader) verify(ctx context.Context, o object) error {
	rctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	got, err := u.cfg.Bucket.Head(rctx, o.Key)
	if err != nil {
		return err
	}
	if got.Size != o.Size || unquote(got.ETag) != unquote(o.ETag) {
		return fmt.Errorf("%s: %w: size %d, etag %s; uploaded %d, %s", o.Key, errMismatch, got.Size, got.ETag, o.Size, o.ETag)
	}
	return nil
}

func unquote(etag string) string { return strings.Trim(etag, `"`) }

// uploadFile copies one file to its key and verifies it. A multipart
// upload is recorded in m before its first part.
func (u *Uploader) uploadFile(ctx context.Context, m *manifest, dir string, lf localFile) (object, error) {
	start := time.Now()
	o, err := u.put(ctx, m, dir, lf)
	if err == nil {
		err = u.step("uploaded")
	}
	if err == nil {
		err = u.verify(ctx, o)
	}
	switch {
	case err == nil:
		u.metrics.objects.WithLabelValues("ok").Inc()
		u.metrics.bytes.Add(float64(o.Size))
		u.metrics.duration.Observe(time.Since(start).Seconds())
	case errors.Is(err, os.ErrNotExist), errors.As(err, new(crash)):
	case errors.Is(err, ErrRefused):
		u.metrics.objects.WithLabelValues("refused").Inc()
	default:
		u.metrics.objects.WithLabelValues("error").Inc()
	}
	return o, err
}

func (u *Uploader) put(ctx context.Context, m *manifest, dir string, lf localFile) (object, error) {
	f, err := os.Open(filepath.Join(dir, lf.name))
	if err != nil {
		return object{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return object{}, err
	}
	o := object{File: lf.name, Key: Key(u.cfg.Prefix, m.Partition, lf.name), Size: info.Size()}
	// Recorded before the request: the server may finish it after a crash
	// or a timeout, and the file be compacted away before it is uploaded
	// again, leaving its rows twice in the bucket.
	if err := u.begin(m, pending{Key: o.Key}); err != nil {
		return o, err
	}
	if o.Size <= u.cfg.PartSize {
		body := make([]byte, o.Size)
		if _, err := io.ReadFull(f, body); err != nil {
			return o, fmt.Errorf("%w: read %s: %w", errUnreadable, lf.name, err)
		}
		rctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
		defer cancel()
		o.ETag, err = u.cfg.Bucket.Put(rctx, o.Key, body)
		return o, err
	}
	o.ETag, err = u.multipart(ctx, m, f, o)
	return o, err
}

// begin records an upload in m (replacing an earlier record of its key)
// and saves m.
func (u *Uploader) begin(m *manifest, p pending) error {
	m.Pending = slices.DeleteFunc(m.Pending, func(x pending) bool { return x.Key == p.Key })
	m.Pending = append(m.Pending, p)
	if err := u.mf.save(m); err != nil {
		return err
	}
	u.manifests[m.Partition] = m
	return nil
}

// multipart uploads a large file in parts, Concurrency at a time.
func (u *Uploader) multipart(ctx context.Context, m *manifest, f *os.File, o object) (string, error) {
	partSize := u.cfg.PartSize
	if n := (o.Size + partSize - 1) / partSize; n > maxParts {
		partSize = (o.Size + maxParts - 1) / maxParts
	}
	rctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	id, err := u.cfg.Bucket.CreateMultipart(rctx, o.Key)
	cancel()
	if err != nil {
		return "", err
	}
	if err := u.begin(m, pending{Key: o.Key, UploadID: id}); err != nil {
		return "", err
	}
	etag, err := u.parts(ctx, f, o, id, partSize)
	if err == nil {
		return etag, nil
	}
	if errors.As(err, new(crash)) {
		return "", err // a crash cleans nothing up: the next start aborts it
	}
	// The upload failed: abort it now to free its parts. The record stays
	// and the next pass aborts it again: a part the server was still
	// writing when the first abort came would bring the upload back.
	actx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	if aerr := u.cfg.Bucket.AbortMultipart(actx, o.Key, id); aerr != nil {
		u.log.Warn("abort a failed multipart upload; the next pass tries again", "key", o.Key, "error", aerr)
	}
	return "", err
}

func (u *Uploader) parts(ctx context.Context, f *os.File, o object, id string, partSize int64) (string, error) {
	if err := u.step("multipart-created"); err != nil {
		return "", err
	}
	n := int((o.Size + partSize - 1) / partSize)
	etags := make([]string, n)
	buffers := make(chan []byte, u.cfg.Concurrency)
	for range u.cfg.Concurrency {
		buffers <- nil
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		var buf []byte
		select {
		case buf = <-buffers:
		case <-gctx.Done():
		}
		if gctx.Err() != nil {
			break
		}
		if buf == nil {
			buf = make([]byte, partSize)
		}
		g.Go(func() error {
			defer func() { buffers <- buf }()
			off := int64(i) * partSize
			body := buf[:min(partSize, o.Size-off)]
			if _, err := f.ReadAt(body, off); err != nil {
				return fmt.Errorf("%w: read %s: %w", errUnreadable, o.File, err)
			}
			rctx, cancel := context.WithTimeout(gctx, u.cfg.Timeout)
			defer cancel()
			etag, err := u.cfg.Bucket.UploadPart(rctx, o.Key, id, int32(i+1), body)
			if err != nil {
				return err
			}
			etags[i] = etag
			return u.step("part-uploaded")
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	return u.cfg.Bucket.CompleteMultipart(rctx, o.Key, id, etags)
}

// crash is a fault a test injects: the uploader stops as a killed process
// would, cleaning nothing up.
type crash struct{ step string }

func (c crash) Error() string { return "crash injected at " + c.step }

func (u *Uploader) step(name string) error {
	if u.hook == nil {
		return nil
	}
	if err := u.hook(name); err != nil {
		return crash{step: name}
	}
	return nil
}
