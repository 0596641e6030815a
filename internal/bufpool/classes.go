package bufpool

import (
	"fmt"
	"math/bits"
)

// Classes are the capacities of pooled buffers: Min bytes, then steps
// classes per power of two up to Max bytes. Sizes outside [Min, Max] are
// not pooled.
type Classes struct {
	minShift, maxShift int
	stepShift          int // log2 of the classes per power of two
}

// NewClasses returns the classes from min to max bytes with steps classes
// per power of two. min, max and steps are powers of two, steps at most
// min; it panics otherwise (the classes are fixed when a package starts).
func NewClasses(min, max, steps int) Classes {
	for _, v := range []int{min, max, steps} {
		if v <= 0 || v&(v-1) != 0 {
			panic(fmt.Sprintf("bufpool: class bound %d is not a power of two", v))
		}
	}
	if min > max || steps > min {
		panic(fmt.Sprintf("bufpool: classes from %d to %d by %d per power of two", min, max, steps))
	}
	return Classes{
		minShift:  bits.Len(uint(min)) - 1,
		maxShift:  bits.Len(uint(max)) - 1,
		stepShift: bits.Len(uint(steps)) - 1,
	}
}

// Min is the smallest pooled capacity.
func (c Classes) Min() int { return 1 << c.minShift }

// Max is the largest pooled capacity.
func (c Classes) Max() int { return 1 << c.maxShift }

// Len is the number of classes.
func (c Classes) Len() int { return (c.maxShift-c.minShift)<<c.stepShift + 1 }

// Of returns the index of the smallest class that holds n bytes, ok false
// when n is not pooled.
func (c Classes) Of(n int) (i int, ok bool) {
	if n < c.Min() || n > c.Max() {
		return 0, false
	}
	if n == c.Min() {
		return 0, true
	}
	// n is in (2^(k-1), 2^k]: steps classes of 2^(k-1-stepShift) bytes.
	k := bits.Len(uint(n - 1))
	shift := k - 1 - c.stepShift
	j := (n - 1<<(k-1) + 1<<shift - 1) >> shift
	return (k-1-c.minShift)<<c.stepShift + j, true
}

// Size is the capacity of class i.
func (c Classes) Size(i int) int {
	if i == 0 {
		return c.Min()
	}
	d, j := (i-1)>>c.stepShift, (i-1)&(1<<c.stepShift-1)+1
	k := c.minShift + d // the class is in (2^k, 2^(k+1)]
	return 1<<k + j<<(k-c.stepShift)
}

// Exact returns the class whose capacity is exactly n, ok false when n is
// not a class's capacity: only a whole class buffer can be handed out
// again for any size of its class.
func (c Classes) Exact(n int) (i int, ok bool) {
	i, ok = c.Of(n)
	return i, ok && c.Size(i) == n
}
