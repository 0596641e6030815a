package otlparrow

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler keeps a column's buffers for its next batches once the record
// batch that held them is released: a reused buffer needs neither zeroing
// nor collecting, and the converter's garbage (about a kilobyte per span)
// would otherwise add to the collector's, which already spends a large
// share of its CPU collecting pdata. Buffers are taken back only through
// the record's reference count (memory.NewBufferWithAllocator calls Free
// when it drops to zero), so memory a record in flight points to is never
// written; a record its holder never releases is left to the garbage
// collector.
//
// Free runs on whichever goroutine releases the record, hence the lock.
type recycler[T any] struct {
	mu   sync.Mutex
	free [][]T
}

// maxFree bounds what a column keeps: the shipped configuration sends one
// or two batches per push, and an idle converter should hold little.
const maxFree = 2

// get returns an empty slice of capacity at least n, reused if one is free.
func (r *recycler[T]) get(n int) []T {
	r.mu.Lock()
	for i := len(r.free) - 1; i >= 0; i-- {
		if s := r.free[i]; cap(s) >= n {
			r.free[i] = r.free[len(r.free)-1]
			r.free[len(r.free)-1] = nil
			r.free = r.free[:len(r.free)-1]
			r.mu.Unlock()
			return s
		}
	}
	r.mu.Unlock()
	return make([]T, 0, n)
}

// buffer wraps s as an Arrow buffer that returns s here when released.
func (r *recycler[T]) buffer(s []T) *memory.Buffer {
	var zero T
	size := int(unsafe.Sizeof(zero))
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), cap(s)*size)[:len(s)*size]
	return memory.NewBufferWithAllocator(b, r)
}

// Free takes back a buffer made by buffer.
func (r *recycler[T]) Free(b []byte) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if cap(b) < size {
		return
	}
	s := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/size)[:0]
	r.mu.Lock()
	if len(r.free) < maxFree {
		r.free = append(r.free, s)
	}
	r.mu.Unlock()
}

// Allocate and Reallocate complete memory.Allocator; Arrow calls neither on
// a buffer it did not allocate.
func (r *recycler[T]) Allocate(n int) []byte { return make([]byte, n) }

func (r *recycler[T]) Reallocate(n int, b []byte) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}
