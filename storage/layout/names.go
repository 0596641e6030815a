package layout

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// Database and measurement names are the client's (InfluxDB takes any
// UTF-8 name: "java.lang:type=Memory", "disk io", "température"); each is
// stored as a folder whose name is safe on every filesystem and object
// store, and maps back to the client's name. The folder name is the
// name percent-encoded as RFC 3986 does (Python's urllib.parse.quote(name,
// safe=""), DuckDB's url_encode): bytes other than A-Z a-z 0-9 - . _ ~ as
// %XX in upper-case hex, so a name that was already a plain folder name
// stays as it is. Then, so that the folder is a plain, visible one:
//   - a leading "." is %2E (hidden on Unix; "." and ".."), and so is a
//     trailing one (Windows drops it);
//   - a name that is one of the folders beside it the sidecar keeps (the
//     OTLP tables beside measurements, _arcstore beside databases) has its
//     first byte encoded ("%74races").
//
// Decoding (url_decode) always gives the name back. Names stay
// case-sensitive, as in InfluxDB: "cpu" and "CPU" are two folders, so the
// data directory must be on a case-sensitive filesystem (Linux's, and
// object stores, are). Windows' device names (CON, NUL, ...) stay as
// they are: names that were valid before keep their folders.

// MaxFolderBytes bounds a folder name: NAME_MAX of ext4, XFS and APFS.
const MaxFolderBytes = 255

// ErrBadName reports a database or measurement name that cannot be
// stored, or a folder name the sidecar did not make.
var ErrBadName = errors.New("bad name")

// DatabaseFolder returns the folder a database is stored under.
func DatabaseFolder(name string) (string, error) {
	return folder("database", name, name == SystemDirName)
}

// MeasurementFolder returns the folder a measurement's table is stored
// under, beside the OTLP tables of its database.
func MeasurementFolder(name string) (string, error) {
	return folder("measurement", name, tableschema.IsOTLPTable(name))
}

func folder(kind, name string, reserved bool) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty %s name", ErrBadName, kind)
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: %s name %q is not valid UTF-8", ErrBadName, kind, name)
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		return "", fmt.Errorf("%w: %s name %q has a control character at byte %d", ErrBadName, kind, name, i)
	}
	f := escapeName(name, reserved)
	if len(f) > MaxFolderBytes {
		return "", fmt.Errorf("%w: %s name %.64q... takes %d bytes as a folder name (percent-encoded), more than %d", ErrBadName, kind, name, len(f), MaxFolderBytes)
	}
	return f, nil
}

const upperHex = "0123456789ABCDEF"

// unreserved reports whether b stays as it is in a folder name.
func unreserved(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '.' || b == '_' || b == '~'
}

func escapeName(name string, reserved bool) string {
	var out []byte
	for i := 0; i < len(name); i++ {
		b := name[i]
		encode := !unreserved(b) || b == '.' && (i == 0 || i == len(name)-1) || reserved && i == 0
		if !encode {
			if out != nil {
				out = append(out, b)
			}
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(name)+16), name[:i]...)
		}
		out = append(out, '%', upperHex[b>>4], upperHex[b&15])
	}
	if out == nil {
		return name
	}
	return string(out)
}

// NameOfFolder returns the name a database or measurement folder stores.
func NameOfFolder(folder string) (string, error) {
	if !strings.Contains(folder, "%") {
		return folder, nil
	}
	out := make([]byte, 0, len(folder))
	for i := 0; i < len(folder); i++ {
		if folder[i] != '%' {
			out = append(out, folder[i])
			continue
		}
		if i+2 >= len(folder) || !isUpperHex(folder[i+1]) || !isUpperHex(folder[i+2]) {
			return "", fmt.Errorf("%w: %% not followed by two upper-case hex digits", ErrBadName)
		}
		out = append(out, unhex(folder[i+1])<<4|unhex(folder[i+2]))
		i += 2
	}
	return string(out), nil
}

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// CheckName rejects a folder name the sidecar would not make for a
// database or table (kind "database", or "table" and "measurement" for a
// database's folders; "table" takes the OTLP tables' too): whatever
// escapes the data directory ("..", "a/b"), collides with the sidecar's
// own folders, or spells a name another way than its folder does. A
// folder that passes is one path element, and the only one of its name.
func CheckName(kind, folder string) error {
	var want string
	name, err := NameOfFolder(folder)
	switch {
	case err != nil:
	case kind == "database":
		want, err = DatabaseFolder(name)
	case kind == "table" && tableschema.IsOTLPTable(folder):
		want = folder
	default:
		want, err = MeasurementFolder(name)
	}
	if err == nil && want != folder {
		err = fmt.Errorf("%w: the sidecar stores %q as %q", ErrBadName, name, want)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", kind, folder, err)
	}
	return nil
}
