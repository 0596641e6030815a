package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// thousand is the payloads of 1000 acknowledged records of unequal sizes,
// so that no record's offset can be guessed from another's.
func thousand() []string {
	out := make([]string, 1000)
	for i := range out {
		out[i] = fmt.Sprintf("record %04d %s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, 40+i%37))
	}
	return out
}

// writeRecords commits payloads into segment seq of w, ten to a commit,
// and returns the offset of each record's frame.
func writeRecords(t *testing.T, w *WAL, payloads []string) []int {
	t.Helper()
	offsets := make([]int, len(payloads))
	at := int(w.durable)
	if at == 0 {
		at = SegmentHeaderSize
	}
	for i, p := range payloads {
		offsets[i] = at
		at += HeaderSize + len(p)
		w.Write([]byte(p))
		if i%10 == 9 || i == len(payloads)-1 {
			require.NoError(t, w.Commit())
		}
	}
	return offsets
}

// recordAt is the index of the record whose frame holds byte off.
func recordAt(offsets []int, off int) int {
	k := 0
	for k+1 < len(offsets) && offsets[k+1] <= off {
		k++
	}
	return k
}

func without(payloads []string, drop ...int) []string {
	var out []string
	for i, p := range payloads {
		if !contains(drop, i) {
			out = append(out, p)
		}
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// replayDropping replays dir as a restart with Repair would, and returns
// the payloads and what the repair reported dropping.
func replayDropping(t *testing.T, dir string) ([]string, []Dropped) {
	t.Helper()
	opts := options(dir, nil)
	opts.Repair = true
	var drops []Dropped
	opts.Dropped = func(d Dropped) int64 {
		d.Payload = bytes.Clone(d.Payload)
		drops = append(drops, d)
		return 1
	}
	got, err := replayAll(t, opts)
	require.NoError(t, err)
	return got, drops
}

// TestDamageInTheLastSegment: one flipped byte in the only segment, with
// records after it, is damage, not a torn tail. Start-up stops naming the
// record; a repair drops that record alone, and the rest replay, then and
// at every later start.
func TestDamageInTheLastSegment(t *testing.T) {
	payloads := thousand()
	for _, tt := range []struct {
		name string
		// flip returns the byte offsets to flip, given the records' offsets
		// and the segment's size.
		flip func(offsets []int, size int) []int
	}{
		{"byte 200", func([]int, int) []int { return []int{200} }},
		{"mid-file", func(_ []int, size int) []int { return []int{size / 2} }},
		{"a payload's first byte", func(o []int, _ int) []int { return []int{o[300] + HeaderSize} }},
		{"a checksum", func(o []int, _ int) []int { return []int{o[700] + 5} }},
		{"a length's low byte", func(o []int, _ int) []int { return []int{o[500]} }},
		{"a length's high byte", func(o []int, _ int) []int { return []int{o[501] + 3} }},
		{"the first record's length", func(o []int, _ int) []int { return []int{o[0] + 1} }},
		{"the next-to-last record", func(o []int, _ int) []int { return []int{o[998] + HeaderSize + 3} }},
		{"two records", func(o []int, _ int) []int { return []int{o[100] + 20, o[900]} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(options(dir, &faultFS{}), 1)
			require.NoError(t, err)
			offsets := writeRecords(t, w, payloads)
			require.NoError(t, w.Close())
			path := filepath.Join(dir, SegmentName(1))
			size := int(segmentSize(t, dir, 1))
			var damaged []int
			for _, off := range tt.flip(offsets, size) {
				flipByte(t, path, off)
				damaged = append(damaged, recordAt(offsets, off))
			}

			_, err = replayAll(t, options(dir, nil))
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce, "damage with records after it stops start-up")
			assert.Equal(t, uint64(1), ce.Seq)
			assert.EqualValues(t, offsets[damaged[0]], ce.Offset)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.EqualValues(t, size, segmentSize(t, dir, 1), "nothing is cut without a repair")

			got, drops := replayDropping(t, dir)
			assert.Equal(t, without(payloads, damaged...), got, "only the damaged records are lost")
			require.Len(t, drops, len(damaged))
			for i, d := range drops {
				k := damaged[i]
				assert.EqualValues(t, offsets[k], d.Offset)
				assert.EqualValues(t, HeaderSize+len(payloads[k]), d.Bytes)
				assert.Len(t, d.Payload, len(payloads[k]), "the payload as far as the next record")
				assert.Equal(t, path, d.Segment)
			}
			got, err = replayAll(t, options(dir, nil))
			require.NoError(t, err, "repaired for good")
			assert.Equal(t, without(payloads, damaged...), got)
			assert.NoFileExists(t, path+repairSuffix)
		})
	}
}

// TestTornTailIsNotDamage: a tail with nothing valid after its first bad
// byte is a write that never finished (or what a recycled file held
// before): it is cut without a word of corruption, whatever it holds.
func TestTornTailIsNotDamage(t *testing.T) {
	payloads := thousand()
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	for _, tt := range []struct {
		name string
		tear func(t *testing.T, path string, offsets []int)
		want []string
	}{
		{"the last frame cut short", func(t *testing.T, path string, o []int) {
			require.NoError(t, os.Truncate(path, int64(o[999]+HeaderSize+10)))
		}, payloads[:999]},
		{"the last frame's header cut short", func(t *testing.T, path string, o []int) {
			require.NoError(t, os.Truncate(path, int64(o[999]+3)))
		}, payloads[:999]},
		{"random bytes after the last frame", func(t *testing.T, path string, _ []int) {
			appendTo(t, path, garbage)
		}, payloads},
		{"zeros after the last frame", func(t *testing.T, path string, _ []int) {
			appendTo(t, path, make([]byte, 64<<10))
		}, payloads},
		{"a frame of another segment after the last frame", func(t *testing.T, path string, _ []int) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			appendTo(t, path, FrameIn(2, data, []byte("not this segment's")))
			appendTo(t, path, FrameIn(2, data, []byte("nor this")))
		}, payloads},
		{"damage to the last record reads as a torn tail", func(t *testing.T, path string, o []int) {
			flipByte(t, path, o[999]+HeaderSize+2)
		}, payloads[:999]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(options(dir, &faultFS{}), 1)
			require.NoError(t, err)
			offsets := writeRecords(t, w, payloads)
			crash(t, w)
			path := filepath.Join(dir, SegmentName(1))
			tt.tear(t, path, offsets)
			got, err := replayAll(t, options(dir, nil))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			end := len(payloads)
			if len(tt.want) < end {
				end = len(tt.want)
			}
			want := int64(SegmentHeaderSize)
			for _, p := range payloads[:end] {
				want += int64(HeaderSize + len(p))
			}
			assert.Equal(t, want, segmentSize(t, dir, 1), "cut after the last whole record")
		})
	}
}

// TestRecycledFileOldLifeIsNotDamage: a recycled file holds a thousand
// records of its previous life behind the new ones. After a crash they
// are the last segment's tail, framed and checksummed, but under another
// seed: cut, never taken for records after damage. Damage among the new
// records is still found.
func TestRecycledFileOldLifeIsNotDamage(t *testing.T) {
	payloads := thousand()
	for _, tt := range []struct {
		name    string
		fresh   int  // records of the new life
		torn    bool // the new life ends in half a record
		flip    int  // of the new life's records, -1 for none
		corrupt bool
	}{
		{name: "crash after a few records", fresh: 20, flip: -1},
		{name: "crash in the middle of a record", fresh: 300, torn: true, flip: -1},
		{name: "damage in the new life", fresh: 300, flip: 150, corrupt: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(options(dir, &faultFS{}), 1)
			require.NoError(t, err)
			writeRecords(t, w, payloads)
			_, err = w.Rotate()
			require.NoError(t, err)
			require.NoError(t, w.RemoveThrough(1))
			_, err = w.Rotate()
			require.NoError(t, err)
			require.EqualValues(t, 3, w.Seq())
			require.Greater(t, w.fileEnd, int64(60000), "segment 3 is segment 1's file, old records and all")
			fresh := make([]string, tt.fresh)
			for i := range fresh {
				fresh[i] = fmt.Sprintf("new %d %s", i, bytes.Repeat([]byte{'n'}, 30+i%50))
			}
			offsets := writeRecords(t, w, fresh)
			crash(t, w)
			path := filepath.Join(dir, SegmentName(3))
			if tt.torn {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				end := offsets[len(offsets)-1] + HeaderSize + len(fresh[len(fresh)-1])
				// Half of another record over the old ones, as a process
				// killed inside a write leaves it.
				half := FrameIn(3, data, []byte(fresh[0]))
				copy(data[end:], half[:len(half)/2])
				require.NoError(t, os.WriteFile(path, data, 0o644))
			}
			if tt.flip >= 0 {
				flipByte(t, path, offsets[tt.flip]+HeaderSize+1)
			}
			got, err := replayAll(t, options(dir, nil))
			if !tt.corrupt {
				require.NoError(t, err)
				assert.Equal(t, fresh, got)
				return
			}
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.EqualValues(t, offsets[tt.flip], ce.Offset)
			got, drops := replayDropping(t, dir)
			assert.Equal(t, without(fresh, tt.flip), got)
			assert.Len(t, drops, 1)
			got, err = replayAll(t, options(dir, nil))
			require.NoError(t, err)
			assert.Equal(t, without(fresh, tt.flip), got)
		})
	}
}

// TestDamageBeforeTheEndMarker: a sealed segment's last record damaged is
// damage (the marker was written after it), in the last segment as in any.
func TestDamageBeforeTheEndMarker(t *testing.T) {
	dir := t.TempDir()
	w := recycledWAL(t, dir, &faultFS{})
	commit(t, w, ys...)
	require.NoError(t, w.Close())
	require.Greater(t, segmentSize(t, dir, 3), int64(SegmentHeaderSize+3*(HeaderSize+200)), "sealed")
	flipByte(t, filepath.Join(dir, SegmentName(3)), SegmentHeaderSize+2*(HeaderSize+200)+HeaderSize+7)
	_, err := replayAll(t, options(dir, nil))
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.EqualValues(t, SegmentHeaderSize+2*(HeaderSize+200), ce.Offset)
	got, drops := replayDropping(t, dir)
	assert.Equal(t, []string{record("x"), ys[0], ys[1]}, got)
	require.Len(t, drops, 1)
	got, err = replayAll(t, options(dir, nil))
	require.NoError(t, err)
	assert.Equal(t, []string{record("x"), ys[0], ys[1]}, got)
}

// TestPayloadRefusedInTheMiddle: a record whose frame is right but whose
// payload its reader refuses is dropped alone by a repair.
func TestPayloadRefusedInTheMiddle(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(options(dir, &faultFS{}), 1)
	require.NoError(t, err)
	commit(t, w, "a", "bad version", "c")
	require.NoError(t, w.Close())
	_, err = replayAll(t, options(dir, nil))
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.EqualValues(t, SegmentHeaderSize+HeaderSize+1, ce.Offset)
	got, drops := replayDropping(t, dir)
	assert.Equal(t, []string{"a", "c"}, got)
	require.Len(t, drops, 1)
	assert.Equal(t, "bad version", string(drops[0].Payload))
}

// TestUnfinishedRepairIsRemoved: a crash inside a repair leaves the
// segment as it was and the rewritten copy, which Open removes.
func TestUnfinishedRepairIsRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, SegmentName(1)+repairSuffix)
	require.NoError(t, os.WriteFile(stale, []byte("half a copy"), 0o644))
	w, err := Open(options(dir, &faultFS{}), 2)
	require.NoError(t, err)
	assert.NoFileExists(t, stale)
	assert.Zero(t, w.Bytes())
	require.NoError(t, w.Close())
}

// TestCRCIndex: the checksum of any stretch, from the index, is what
// hash/crc32 computes, whatever the seed, the length and the alignment.
func TestCRCIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 300000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	c := newCRCIndex(data, 17)
	for range 2000 {
		p := 17 + rng.IntN(len(data)-17)
		e := p + rng.IntN(len(data)-p+1)
		seed := rng.Uint32()
		require.Equal(t, crc32.Update(seed, castagnoli, data[p:e]), c.checksum(seed, p, e), "seed %x, [%d, %d)", seed, p, e)
	}
	for _, n := range []int{0, 1, 255, 256, 257, 65536, 1<<24 + 3} {
		seed := rng.Uint32()
		assert.Equal(t, crc32.Update(seed, castagnoli, make([]byte, n))^crc32.Update(0, castagnoli, make([]byte, n)), shiftCRC(seed, n), "%d zero bytes", n)
	}
	// Longer shifts (up to MaxRecordSize) are shorter ones in a row.
	for range 100 {
		a, b, seed := rng.IntN(MaxRecordSize/2), rng.IntN(MaxRecordSize/2), rng.Uint32()
		require.Equal(t, shiftCRC(shiftCRC(seed, a), b), shiftCRC(seed, a+b))
	}
}

// BenchmarkNextFrame: searching a recycled file's old bytes for a record
// of the new life (there is none) costs the bytes' size, not their size
// times the lengths they happen to declare. "records" is 16 MiB of old
// records of 1000-row log batches; "worst" declares, at every fourth
// offset, a length that fits in what is left.
func BenchmarkNextFrame(b *testing.B) {
	const size = 16 << 20
	worst := make([]byte, size)
	for i := 0; i+4 <= size; i += 4 {
		binary.LittleEndian.PutUint32(worst[i:], uint32(size-i-64))
	}
	var records []byte
	times := make([]time.Time, 1000)
	for i := range times {
		times[i] = time.Date(2026, 11, 27, 9, 0, 0, i*1e6, time.UTC)
	}
	for i := 0; len(records) < size; i++ {
		rec, ipc := storagetest.LogBatch(b, fmt.Sprint("old record ", i), times...)
		rec.Release()
		records = append(records, frame(uint32(i), [][]byte{ipc})...)
	}
	for _, data := range []struct {
		name string
		data []byte
	}{{"records", records[:size]}, {"worst", worst}} {
		b.Run(data.name, func(b *testing.B) {
			m := endMarker(12345)
			b.ReportAllocs()
			b.SetBytes(size)
			cpu0 := benchcpu.Process()
			for b.Loop() {
				if nextFrame(data.data, 0, 12345, m[:]) != -1 {
					b.Fatal("found a frame in old bytes")
				}
			}
			b.ReportMetric(float64(benchcpu.Process()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestMulMod: the table-driven product is the bit-by-bit one.
func TestMulMod(t *testing.T) {
	bitwise := func(a, b uint32) uint32 {
		var p uint32
		for m := uint32(1) << 31; m != 0; m >>= 1 {
			if a&m != 0 {
				p ^= b
			}
			b = mulX(b)
		}
		return p
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, ab := range [][2]uint32{{0, 0}, {1 << 31, 0xdeadbeef}, {0xffffffff, 0xffffffff}, {1, 1}} {
		assert.Equal(t, bitwise(ab[0], ab[1]), mulMod(ab[0], ab[1]))
	}
	for range 100000 {
		a, b := rng.Uint32(), rng.Uint32()
		require.Equal(t, bitwise(a, b), mulMod(a, b), "%x·%x", a, b)
	}
}
