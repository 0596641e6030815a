package schema

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxColumnNameBytes bounds a column name: Parquet has no limit, but
// engines and dashboards choke on longer ones, and Arc's clients never send
// them.
const MaxColumnNameBytes = 255

// ErrBadColumnName reports a column name that no file may carry.
var ErrBadColumnName = errors.New("bad column name")

// reservedColumns are names the layout already uses: the hive partition
// keys would shadow such a column on read.
var reservedColumns = map[string]bool{"date": true, "hour": true}

// CheckColumnName is the one rule for the names of columns clients choose
// (Arc measurement fields and tags): not empty, at most MaxColumnNameBytes,
// valid UTF-8, no control characters (a NUL or a newline in a name breaks
// tools that print or join names, and no Arc client sends one), and not a
// partition key.
func CheckColumnName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadColumnName)
	case len(name) > MaxColumnNameBytes:
		return fmt.Errorf("%w %.32q...: longer than %d bytes", ErrBadColumnName, name, MaxColumnNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: not valid UTF-8", ErrBadColumnName, name)
	case reservedColumns[name]:
		return fmt.Errorf("%w %q: reserved for the partition (date=YYYY-MM-DD/hour=H)", ErrBadColumnName, name)
	}
	for i, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w %q: control character %U at byte %d", ErrBadColumnName, name, r, i)
		}
	}
	return nil
}
