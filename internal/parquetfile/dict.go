package parquetfile

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// stringDict is one dictionary of strings for a row group. pqarrow would
// hash every value into its own memo table, which allocates a closure per
// value (arrow-go 18.8); handed an Arrow dictionary array whose dictionary
// is the same for the whole row group, it writes the dictionary page once
// and the indices as they are. The values are found in an open-addressing
// table keyed by a string's length and first and last eight bytes, which
// are the whole string up to 16 bytes (most of our dictionaries are
// service names, levels, kinds, regions), so such a value is found without
// hashing or comparing its bytes; a longer one is hashed and compared once.
// A Go map with a scan of the first eight values before it took two to
// three times as long per value (BenchmarkStringDict). The keys point into
// the Arrow buffers, which the writer keeps until the row group is written.
type stringDict struct {
	slots  []dictSlot // len is a power of two, at most half full
	keys   []string   // in index order
	values *array.StringBuilder
}

// dictSlot is one entry of stringDict's table: idx+1 (0 marks an empty
// slot) of the value of length n whose dictKey is head and tail.
type dictSlot struct {
	head, tail uint64
	n          uint32
	idx1       int32
}

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// dictKey returns what dictSlot keeps of k: its first and last eight bytes
// (overlapping below 16 bytes, zero-padded below 8), which are all of it up
// to 16 bytes; past that, its first eight bytes and a hash of all of it
// (messages that differ only in the middle must not share a key).
func dictKey(k []byte) (head, tail uint64) {
	switch {
	case len(k) > 16:
		return binary.LittleEndian.Uint64(k), maphash.Bytes(dictSeed, k)
	case len(k) >= 8:
		return binary.LittleEndian.Uint64(k), binary.LittleEndian.Uint64(k[len(k)-8:])
	case cap(k) >= 8:
		// The value is followed by the next, or by the Arrow buffer's
		// padding: load eight bytes and keep the value's.
		head = binary.LittleEndian.Uint64(k[:8]) & (1<<(8*len(k)) - 1)
		return head, head
	}
	for i, c := range k {
		head |= uint64(c) << (8 * i)
	}
	return head, head
}

var dictSeed = maphash.MakeSeed()

// add returns the index of k, adding it to the dictionary. With limit > 0
// it reports false instead of adding a value beyond the limit'th.
func (d *stringDict) add(k []byte, limit int) (int32, bool) {
	if d.slots == nil {
		d.slots = tableOf(&slotTables)
	}
	head, tail := dictKey(k)
	n := uint32(len(k))
	mask := uint64(len(d.slots) - 1)
	i := slotOf(dictHash(head, tail, n), len(d.slots))
	for {
		s := &d.slots[i]
		if s.idx1 == 0 {
			break
		}
		if s.n == n && s.head == head && s.tail == tail && (n <= 16 || d.keys[s.idx1-1] == string(k)) {
			return s.idx1 - 1, true
		}
		i = (i + 1) & mask
	}
	if limit > 0 && len(d.keys) >= limit {
		return 0, false
	}
	if d.values == nil {
		d.values = array.NewStringBuilder(memory.DefaultAllocator)
	}
	idx := int32(len(d.keys))
	d.keys = append(d.keys, unsafe.String(unsafe.SliceData(k), len(k)))
	d.values.BinaryBuilder.Append(k)
	d.slots[i] = dictSlot{head: head, tail: tail, n: n, idx1: idx + 1}
	if 2*len(d.keys) > len(d.slots) {
		d.grow()
	}
	return idx, true
}

func dictHash(head, tail uint64, n uint32) uint64 {
	return mix(head ^ bits.RotateLeft64(tail, 29) ^ uint64(n))
}

// mix spreads every bit of x over the top bits slotOf takes (two rounds of
// multiply and fold: one round left the four HTTP methods in two slots).
func mix(x uint64) uint64 {
	x *= 0x9e3779b97f4a7c15
	x ^= x >> 32
	return x * 0xd6e8feb86659fd93
}

// slotOf is where hash h starts in a table of size slots (a power of two):
// its top bits, which a multiplication mixes from every bit of the key
// (the low bits depend on the key's low bits only: keys that differ above
// them, such as i<<48, would all start in one slot).
func slotOf(h uint64, size int) uint64 {
	return h >> (64 - bits.TrailingZeros(uint(size)))
}

// grow doubles the table and places every value again.
func (d *stringDict) grow() {
	d.slots = growTable(d.slots, func(s *dictSlot) uint64 { return dictHash(s.head, s.tail, s.n) }, func(s *dictSlot) bool { return s.idx1 != 0 })
}

// growTable returns a table of twice old's size holding old's used slots,
// each placed again from its hash (both tables are open-addressing ones of
// a power-of-two size, probed linearly).
func growTable[S any](old []S, hash func(*S) uint64, used func(*S) bool) []S {
	slots := make([]S, 2*len(old))
	mask := uint64(len(slots) - 1)
	for k := range old {
		if !used(&old[k]) {
			continue
		}
		i := slotOf(hash(&old[k]), len(slots))
		for used(&slots[i]) {
			i = (i + 1) & mask
		}
		slots[i] = old[k]
	}
	return slots
}

// size is the number of values in the dictionary.
func (d *stringDict) size() int { return len(d.keys) }

// finish returns the dictionary of the values added.
func (d *stringDict) finish() *array.String {
	if d.values == nil {
		d.values = array.NewStringBuilder(memory.DefaultAllocator)
	}
	return d.values.NewStringArray()
}

// reset empties the dictionary for the next row group, keeping its table.
func (d *stringDict) reset() {
	if d.values != nil {
		d.values.Release()
		d.values = nil
	}
	clear(d.slots)
	clear(d.keys)
	d.keys = d.keys[:0]
}

// release empties the dictionary and gives its table to slotTables.
func (d *stringDict) release() {
	d.reset()
	keepTable(&slotTables, d.slots)
	d.slots = nil
}

// slotTables keeps the emptied tables of closed writers' dictionaries for
// the next ones: growing a table anew for every column of every file was
// most of the dictionaries' allocations. Only a writer's last table goes
// back, so the pool's tables are the sizes dictionaries grew to.
var slotTables slicePool[dictSlot]

// minSlots is the size of a new table.
const minSlots = 64

// tableOf returns an emptied table from p, or a new one.
func tableOf[S any](p *slicePool[S]) []S {
	if s := p.get(); cap(s) >= minSlots {
		return s[:cap(s)]
	}
	return make([]S, minSlots)
}

// keepTable gives an emptied table back to p unless it grew past
// maxPooledSlots: a table is cleared for every row group, and one kept
// that large would be handed to dictionaries of a few values.
func keepTable[S any](p *slicePool[S], s []S) {
	if len(s) <= maxPooledSlots {
		p.put(s)
	}
}

// maxPooledSlots is the largest table kept for reuse: room for 4096 values.
const maxPooledSlots = 8192

// dictColumn dictionary-encodes one top-level string or integer column
// for a row group before pqarrow sees it (see stringDict and intDict). The
// indices of all the row group's runs go into one array: pqarrow compares
// each chunk's dictionary with the one it took first and recomputes the
// chunk's referenced values for the statistics (a hash of every index
// through arrow's compute engine), so one chunk per row group instead of
// one per record saves that per record.
type dictColumn struct {
	name string
	// off: the first row group had mostly distinct values, so the column
	// is written without a dictionary.
	off bool
	// distinct: when a string column's dictionary was given up, nearly
	// every value seen until then was new (uniqueShare), as in a column of
	// ids.
	distinct bool

	values  stringDict
	ints    *intDict // instead of values, for an int64 column
	indices []int32  // of every pending run, in order (0 for a null)
	valid   []byte   // validity bitmap of indices when nulls > 0
	nulls   int
	dict    arrow.Array
	def     []int16 // definition levels, for writeEmptyMin
}

func newDictColumn(name string, typ arrow.DataType) *dictColumn {
	d := &dictColumn{name: name}
	if typ.ID() == arrow.INT64 {
		d.ints = &intDict{}
	}
	return d
}

// dictType is the Arrow type of the column's dictionary arrays.
func (d *dictColumn) dictType() arrow.DataType {
	if d.ints != nil {
		return intDictType
	}
	return dictType
}

// size is the number of values in the dictionary.
func (d *dictColumn) size() int {
	if d.ints != nil {
		return d.ints.size()
	}
	return d.values.size()
}

// build encodes the column's values of the pending runs. With limit > 0
// it gives up (returning false, and the column is then written without a
// dictionary) as soon as the dictionary holds more than limit values, or
// earlier when nearly all of the first values were new (see minProbe): a
// column of ids is found out after a few of its values, not after
// hashing every one.
func (d *dictColumn) build(runs []run, field int, limit int) bool {
	total := 0
	d.nulls = 0
	for _, r := range runs {
		total += int(r.end - r.start)
		if r.rec.Column(field).NullN() > 0 {
			d.nulls = -1 // counted below
		}
	}
	if d.indices == nil {
		d.indices = int32s.get()
	}
	d.indices = slices.Grow(d.indices[:0], total)[:total]
	hasNulls := d.nulls != 0
	if hasNulls {
		d.nulls = 0
		d.valid = append(d.valid[:0], make([]byte, bitutil.BytesForBits(int64(total)))...)
	}
	if d.ints != nil {
		return d.buildInts(runs, field, limit, hasNulls)
	}
	return d.buildStrings(runs, field, limit, hasNulls)
}

// buildStrings is build for a string column. The values are read straight
// from the string arrays' offsets and bytes (arrow-go's String.Value and a
// builder's appends were a third of this).
func (d *dictColumn) buildStrings(runs []run, field int, limit int, hasNulls bool) bool {
	at, probe := 0, probeAt(limit)
	// Values come in runs (the resource and scope columns repeat for
	// every span of a resource): a value equal to the one before takes its
	// index without a lookup.
	prev := lastValue{idx: -1}
	for _, r := range runs {
		col := r.rec.Column(field).(*array.String)
		v, nullable := viewOf(col), col.NullN() > 0
		if n := int(r.end - r.start); wholeRuns && n >= minWholeRun {
			switch {
			case col.NullN() == col.Len():
				clear(d.indices[at : at+n])
				d.nulls += n
				at += n
				continue
			case !nullable && oneValue(v, int(r.start), int(r.end)):
				idx, ok := d.indexOf(v.at(int(r.start)), &prev, limit, at)
				if !ok {
					return false
				}
				fill32(d.indices[at:at+n], idx)
				if hasNulls {
					bitutil.SetBitsTo(d.valid, int64(at), int64(n), true)
				}
				at += n
				if !d.probed(&probe, at-d.nulls) {
					return false
				}
				continue
			}
		}
		for i := int(r.start); i < int(r.end); i, at = i+1, at+1 {
			if nullable && col.IsNull(i) {
				d.indices[at] = 0
				d.nulls++
				continue
			}
			if hasNulls {
				bitutil.SetBit(d.valid, at)
			}
			idx, ok := d.indexOf(v.at(i), &prev, limit, at)
			if !ok {
				return false
			}
			d.indices[at] = idx
			if !d.probed(&probe, at+1-d.nulls) {
				return false
			}
		}
	}
	d.dict = d.values.finish()
	return true
}

// lastValue is the value buildStrings indexed last and its index (idx -1:
// none yet).
type lastValue struct {
	k   []byte
	idx int32
}

// indexOf returns k's dictionary index, adding it, or false when the
// dictionary passed limit; at is k's row, for the distinct verdict.
func (d *dictColumn) indexOf(k []byte, prev *lastValue, limit, at int) (int32, bool) {
	if prev.idx >= 0 && bytes.Equal(k, prev.k) {
		return prev.idx, true
	}
	idx, ok := d.values.add(k, limit)
	if !ok {
		seen := at + 1 - d.nulls
		d.distinct = (limit+1)*100 >= seen*uniqueShare
		return 0, false
	}
	prev.k, prev.idx = k, idx
	return idx, true
}

// probed checks, once seen values have passed *probe, whether nearly all
// were new; it returns false (and marks the column distinct) when they
// were, and turns the probe off once it has run.
func (d *dictColumn) probed(probe *int, seen int) bool {
	if *probe <= 0 || seen < *probe {
		return true
	}
	if mostlyNew(*probe, d.values.size()) {
		d.distinct = true
		return false
	}
	*probe = -1
	return true
}

// wholeRuns: whether buildStrings takes a run of rows that are all null,
// or all one value, at once (the resource and scope columns of a batch
// of one resource, its absent host or region), instead of value by value.
// Comparing each value with the one before was 8 % of the flush of the
// load harness's spans, whose 14 dictionary columns hold one value or
// none per batch; one check of a run's offsets and one comparison of its
// bytes with themselves shifted by a value take a fraction of that
// (TestWholeRunsWriteTheSameFiles).
var wholeRuns = true

// minWholeRun is the fewest rows a run needs for buildStrings to check
// whether it is whole.
const minWholeRun = 16

// oneValue reports whether values [start, end) of v are all the same:
// all as long as the first, and their bytes equal to themselves shifted
// by that length.
func oneValue(v strView, start, end int) bool {
	offs := v.offs[start : end+1]
	n := offs[1] - offs[0]
	for i := 2; i < len(offs); i++ {
		if offs[i]-offs[i-1] != n {
			return false
		}
	}
	lo, hi := offs[0], offs[len(offs)-1]
	return bytes.Equal(v.data[lo+n:hi], v.data[lo:hi-n])
}

// fill32 sets every element of s to x.
func fill32(s []int32, x int32) {
	if len(s) == 0 {
		return
	}
	s[0] = x
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}

// probeAt is when a dictionary that may take limit values asks whether it
// should give up early (-1: never).
func probeAt(limit int) int {
	if limit/4 < minProbe {
		return -1
	}
	return limit / 4
}

// mostlyNew reports whether a dictionary of size values, seen values into
// its column, should give up: nearly all of them were new.
func mostlyNew(seen, size int) bool {
	return size*100 >= seen*uniqueShare
}

// steadyGrowth watches a dictionary that may take limit values of total
// as they go in, and reports once, at probeAt(limit) values, whether it
// will pass the limit: whether its values were new at the same rate in
// the second half of those as in the first (within steadySlack), and that
// rate, kept up over the total, would pass it. A map's values that mix a
// few repeated ones with one new per row (a request id among a span's
// attributes) pass the limit at a third of the row group; hashing them
// until then, to give the dictionary up anyway, was 5 % of a flush of
// the load harness's spans. Values drawn from a set too small to pass the
// limit come new ever more rarely: they keep growing to the end and keep
// the dictionary, as they did before the probe.
type steadyGrowth struct {
	limit, total, at int
	// seenHalf and sizeHalf are the values seen and the dictionary's size
	// when half of at had been seen (seenHalf 0: not yet).
	seenHalf, sizeHalf int
}

// steadySlack is how much slower, in percent, the dictionary may grow in
// the second half of the probe than in the first for its growth to count
// as steady. Values drawn at random from a set of S values come new at
// e^(-n/S) of their first rate after n of them: a leaf whose values all
// come from one set counts as steady only where the set is over 4 times
// the limit, which it passes anyway. Where the set's values are some of
// the leaf's (one key among several), a set somewhat under the limit can
// count as steady, and its leaf is then written without a dictionary, as
// a leaf of ids is (one in three from a set of 0.9 of the limit keeps
// it: TestMapValuesGiveUpWhenTheyKeepComingNew).
const steadySlack = 3

func newSteadyGrowth(limit, total int) steadyGrowth {
	return steadyGrowth{limit: limit, total: total, at: probeAt(limit)}
}

// passes is called with the values seen so far and the dictionary's size;
// it reports true once, when the dictionary will pass its limit.
func (g *steadyGrowth) passes(seen, size int) bool {
	switch {
	case g.at <= 0 || seen < g.at/2:
		return false
	case g.seenHalf == 0:
		g.seenHalf, g.sizeHalf = seen, size
		return false
	case seen < g.at:
		return false
	}
	g.at = -1
	first, second := g.sizeHalf*(seen-g.seenHalf), (size-g.sizeHalf)*g.seenHalf // each rate times both windows
	return second*100 >= first*(100-steadySlack) && size*g.total > g.limit*seen
}

// A dictionary that may take limit values asks after limit/4 values
// whether nearly all were new (uniqueShare), and gives up if so: a column
// of limit values drawn at random would show 88 % new values there, one of
// fewer values less, and a column of ids shows all new. So ids are found
// out after a quarter of the values they took before. minProbe keeps the
// question from small row groups, where the limit itself comes soon.
const minProbe = 256

// uniqueShare is the percentage of new values among those a column's
// dictionary saw before giving up above which its values count as
// distinct (Options.LiteralPages).
const uniqueShare = 95

// dictLimit is the most distinct values a column's dictionary may take
// from the first row group of rows rows: each value must repeat about eight
// times or more (unless there are too few rows to tell). Below that a
// dictionary saves few bytes and costs CPU: arrow-go allocates twice per
// distinct value when it takes the dictionary in.
func dictLimit(rows int64) int {
	if rows < 256 {
		return 0
	}
	return int(rows / 8)
}

// array returns the dictionary array of the pending runs' values.
func (d *dictColumn) array() arrow.Array {
	var valid *memory.Buffer
	if d.nulls > 0 {
		valid = memory.NewBufferBytes(d.valid)
	}
	idx := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(d.indices))
	data := array.NewDataWithDictionary(d.dictType(), len(d.indices), []*memory.Buffer{valid, idx}, d.nulls, 0, d.dict.Data().(*array.Data))
	defer data.Release()
	return array.MakeFromData(data)
}

func (d *dictColumn) reset() {
	d.values.reset()
	if d.ints != nil {
		d.ints.reset()
	}
	d.indices = d.indices[:0]
	if d.dict != nil {
		d.dict.Release()
		d.dict = nil
	}
}

// release gives the column's index slice back to int32s once the file is
// written.
func (d *dictColumn) release() {
	int32s.put(d.indices)
	d.indices = nil
	if d.def != nil {
		int16s.put(d.def)
		d.def = nil
	}
	d.values.release()
	if d.ints != nil {
		d.ints.release()
	}
}
