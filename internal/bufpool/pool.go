package bufpool

import (
	"sync"
	"unsafe"
)

// Pool keeps whole class buffers given back, up to limit bytes in all,
// and hands them out again. It is safe for concurrent use: one mutex
// guards the free lists and counters, held only to pop or push a slice.
type Pool struct {
	classes Classes
	limit   int64
	align   int

	mu   sync.Mutex
	free [][][]byte // by class
	// held is the bytes on the free lists; reused and fresh the class
	// bytes handed out from them and newly allocated.
	held, reused, fresh int64
}

// Stats are a pool's counters, in bytes.
type Stats struct {
	Held   int64 // kept on the free lists
	Reused int64 // of class buffers handed out again
	Fresh  int64 // of class buffers newly allocated
}

// New returns a pool of the classes that keeps at most limit bytes. With
// align above 1 (a power of two), every buffer it allocates starts at a
// multiple of align bytes and it keeps only buffers that do.
func New(classes Classes, limit int64, align int) *Pool {
	return &Pool{classes: classes, limit: limit, align: align, free: make([][][]byte, classes.Len())}
}

// Get returns n bytes with the capacity of their class (n when n is not
// pooled). recycled is true when the buffer was kept: its contents are
// then whatever its last user left; a new buffer is zeroed.
func (p *Pool) Get(n int) (b []byte, recycled bool) {
	i, ok := p.classes.Of(n)
	if !ok {
		return p.alloc(n), false
	}
	c := p.classes.Size(i)
	p.mu.Lock()
	if list := p.free[i]; len(list) > 0 {
		b = list[len(list)-1]
		list[len(list)-1] = nil
		p.free[i] = list[:len(list)-1]
		p.held -= int64(c)
		p.reused += int64(c)
		p.mu.Unlock()
		return b[:n], true
	}
	p.fresh += int64(c)
	p.mu.Unlock()
	return p.alloc(c)[:n], false
}

// Put keeps b, which nothing reads any more, if its capacity is a class's
// (a slice of a class buffer is not), it is aligned and there is room; it
// reports whether b was kept.
func (p *Pool) Put(b []byte) bool {
	c := cap(b)
	i, ok := p.classes.Exact(c)
	if !ok || p.align > 1 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(p.align) != 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held+int64(c) > p.limit {
		return false
	}
	p.free[i] = append(p.free[i], b[:0])
	p.held += int64(c)
	return true
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Held: p.held, Reused: p.reused, Fresh: p.fresh}
}

// Empty drops every buffer kept.
func (p *Pool) Empty() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.free)
	p.held = 0
}

func (p *Pool) alloc(n int) []byte {
	if p.align <= 1 {
		return make([]byte, n)
	}
	return aligned(n, p.align)
}

// aligned returns n zeroed bytes, with a capacity of n, that start at a
// multiple of align bytes (a power of two).
func aligned(n, align int) []byte {
	buf := make([]byte, n+align)
	shift := (align - int(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%uintptr(align))) % align
	return buf[shift : shift+n : shift+n]
}
