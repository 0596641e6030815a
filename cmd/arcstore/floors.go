package main

import (
	"flag"
	"fmt"
	"time"
)

// The store and the handlers read a count, size or duration of 0 or less
// as "the default" (storage.Options, receiver.MsgpackHandler), grpc reads
// 0 streams as no limit and net/http an idle timeout of 0 as the read
// timeout: passed on, -max-wal-bytes 0 would mean 4GiB without a word. So every numeric flag has its lowest value here,
// and a value under it is refused at start naming the flag. A flag whose
// 0 means something of its own (said in its usage and docs/SIDECAR.md)
// takes 0, and its error says what 0 does.

// floor is the lowest value of a numeric flag: more than 0, or, with
// zero set, 0, which then does what zero says.
type floor struct{ zero string }

var positive floor

// flagFloors are the floors of the sidecar's flags; sizes cannot be
// negative, so a size's floor only matters when it is positive.
var flagFloors = map[string]floor{
	"flush-interval":             positive,
	"flush-bytes":                positive,
	"flush-workers":              positive,
	"max-buffer-bytes":           positive,
	"buffer-wait":                {"0 refuses at once"},
	"shutdown-timeout":           {"0 closes the streams at once"},
	"compact-interval":           {"0 turns retention and compaction off"},
	"compact-min-age":            {"0 compacts a partition once its hour has ended"},
	"memory-limit":               {"0 sets no limit"},
	"max-body-bytes":             positive,
	"max-decoded-bytes":          positive,
	"http-read-timeout":          positive,
	"http-idle-timeout":          positive,
	"max-grpc-streams":           positive,
	"max-columns":                positive,
	"max-string-bytes":           positive,
	"max-partitions-per-request": positive,
	"max-decoded-memory":         positive,
	"max-wal-bytes":              positive,
	"min-free-disk":              {"0 keeps no floor"},
	"local-retention":            {"0 keeps the local partitions"},
	"iceberg-commit-interval":    positive,
	"iceberg-snapshot-retention": positive,
	"dedup-window":               positive,
}

// compactFloors are the floors of `arcstore compact`'s flags.
var compactFloors = map[string]floor{
	"min-age": {"0 compacts every partition whose hour has ended"},
}

// checkFloors refuses a flag value under its floor. A numeric flag without
// a floor, or a floor without its flag, is an error too, so that a new
// flag cannot slip past (every test that parses flags sees it).
func checkFloors(fs *flag.FlagSet, floors map[string]floor) error {
	for name := range floors {
		if fs.Lookup(name) == nil {
			return fmt.Errorf("a floor for -%s, which is no flag", name)
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err == nil {
			err = checkFloor(f, floors)
		}
	})
	return err
}

func checkFloor(f *flag.Flag, floors map[string]floor) error {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return nil
	}
	var n int64
	count := false // a count's least positive value is 1, not "more than 0"
	switch v := g.Get().(type) {
	case time.Duration:
		n = int64(v)
	case int64: // byteSize
		n = v
	case int:
		n, count = int64(v), true
	case uint:
		n, count = int64(min(v, 1)), true // only 0 is under a floor; min keeps it in range
	default:
		return nil
	}
	fl, ok := floors[f.Name]
	switch {
	case !ok:
		return fmt.Errorf("-%s has no floor in floors.go", f.Name)
	case fl.zero != "" && n < 0:
		return fmt.Errorf("-%s %s: want 0 or more (%s)", f.Name, f.Value, fl.zero)
	case fl.zero == "" && n <= 0 && count:
		return fmt.Errorf("-%s %s: want 1 or more (the default is %s)", f.Name, f.Value, f.DefValue)
	case fl.zero == "" && n <= 0:
		return fmt.Errorf("-%s %s: want more than 0 (the default is %s)", f.Name, f.Value, f.DefValue)
	}
	return nil
}
