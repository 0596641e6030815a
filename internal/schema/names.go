package schema

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxColumnNameBytes bounds a column name: Parquet has no limit, but
// engines and dashboards choke on longer ones, and Arc's clients never send
// them.
const MaxColumnNameBytes = 255

// ErrBadColumnName reports a column name that no file may carry.
var ErrBadColumnName = errors.New("bad column name")

// TakenSuffix is appended to the name of a column whose name is taken, so
// that the value is kept and read back under a name of its own: a name the
// layout uses (reservedColumns), a name that differs only in case from an
// earlier column of the same measurement, and, as Arc does, a field named
// like a tag.
const TakenSuffix = "_value"

// reservedColumns are names the layout already uses: the timestamp, and
// the hive partition keys, which would shadow such a column on read. They
// are matched ignoring case, as engines match column names: DuckDB returns
// a column "TIME" for `SELECT time` (the timestamp becomes time_1) and
// replaces "Date" and "HOUR" with the partition's values.
var reservedColumns = map[string]bool{"time": true, "date": true, "hour": true}

// foldColumn is the key under which engines that ignore case (DuckDB,
// Spark) see a column name.
func foldColumn(name string) string { return strings.ToLower(name) }

// CheckColumnName is the one rule for the names of columns clients choose
// (Arc measurement fields and tags) as files carry them: not empty, at most
// MaxColumnNameBytes, valid UTF-8, no control characters (a NUL or a
// newline in a name breaks tools that print or join names, and no Arc
// client sends one), and not a reserved name in any case. ColumnNames
// gives a client's names the names that pass.
func CheckColumnName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadColumnName)
	case len(name) > MaxColumnNameBytes:
		return fmt.Errorf("%w %.32q...: longer than %d bytes", ErrBadColumnName, name, MaxColumnNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: not valid UTF-8", ErrBadColumnName, name)
	case reservedColumns[foldColumn(name)]:
		return fmt.Errorf("%w %q: reserved, in any case, for the timestamp and the partition (time, date=YYYY-MM-DD/hour=H)", ErrBadColumnName, name)
	}
	for i, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w %q: control character %U at byte %d", ErrBadColumnName, name, r, i)
		}
	}
	return nil
}

// ColumnNames gives the columns of one measurement, in the order they
// first appear, the names they are stored under: a client's name as it is,
// unless it is taken, by a reserved name or by an earlier column that
// differs only in case (Spark refuses a file with both, DuckDB renames one
// of them by position); then the name with TakenSuffix ("TIME_value",
// "Usage_value"). The zero value is ready; it is not safe for concurrent
// use.
type ColumnNames struct {
	stored map[string]string // folded stored name -> the stored name
}

// Store returns the name the column a client calls name is stored under,
// and takes it. It fails when the name is not valid (CheckColumnName),
// the suffixed name included.
func (c *ColumnNames) Store(name string) (string, error) {
	stored := name
	for c.taken(stored) && len(stored) <= MaxColumnNameBytes {
		stored += TakenSuffix
	}
	if err := CheckColumnName(stored); err != nil {
		return "", err
	}
	if c.stored == nil {
		c.stored = map[string]string{}
	}
	c.stored[foldColumn(stored)] = stored
	return stored, nil
}

// Forget gives back a stored name, for a column its caller dropped.
func (c *ColumnNames) Forget(stored string) {
	delete(c.stored, foldColumn(stored))
}

func (c *ColumnNames) taken(name string) bool {
	f := foldColumn(name)
	_, ok := c.stored[f]
	return ok || reservedColumns[f]
}
