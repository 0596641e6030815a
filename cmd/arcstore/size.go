package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/dustin/go-humanize"
)

// byteSize is the flag.Value of every size flag: a plain byte count
// (33554432) or a number with a unit, binary (KiB, MiB, GiB: powers of
// 1024) or decimal (KB, MB, GB: powers of 1000), case-insensitive, with or
// without a space ("32MiB", "1.5 GB"). The flag package names the flag in
// the error of a value it refuses.
type byteSize int64

// sizeVar defines a size flag stored in *p, which starts at value.
func sizeVar(fs *flag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Var((*byteSize)(p), name, usage)
}

var errSizeTooLarge = errors.New("larger than 8 EiB")

func (b *byteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("want a byte count or a size such as 32MiB (units KiB, MiB, GiB, KB, MB, GB): %w", err)
	}
	if n > math.MaxInt64 {
		return errSizeTooLarge
	}
	*b = byteSize(n)
	return nil
}

// Get makes a size a flag.Getter, for checkFloors.
func (b *byteSize) Get() any { return int64(*b) }

// String gives the size in the largest binary unit that divides it, so
// defaults read as they are documented (32MiB) and parse back exactly.
func (b *byteSize) String() string {
	if b == nil {
		return "0"
	}
	n := int64(*b)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// formatSize is how errors and logs show a size.
func formatSize(n int64) string { return (*byteSize)(&n).String() }
