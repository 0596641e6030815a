package layout_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
)

func TestFolderNames(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		database    string // "" when DatabaseFolder rejects it
		measurement string // "" when MeasurementFolder rejects it
	}{
		{"plain", "cpu", "cpu", "cpu"},
		{"unreserved punctuation stays", "a-b_c~d.e", "a-b_c~d.e", "a-b_c~d.e"},
		{"space", "disk io", "disk%20io", "disk%20io"},
		{"JMX name", "java.lang:type=Memory", "java.lang%3Atype%3DMemory", "java.lang%3Atype%3DMemory"},
		{"UTF-8 bytes in upper-case hex", "température", "temp%C3%A9rature", "temp%C3%A9rature"},
		{"slash", "a/b", "a%2Fb", "a%2Fb"},
		{"percent", "50%", "50%25", "50%25"},
		{"leading dot", ".hidden", "%2Ehidden", "%2Ehidden"},
		{"trailing dot", "name.", "name%2E", "name%2E"},
		{"dot dot", "..", "%2E%2E", "%2E%2E"},
		{"the system folder as a database", layout.SystemDirName, "%5Farcstore", layout.SystemDirName},
		{"an OTLP table as a measurement", schema.TableTraces, schema.TableTraces, "%74races"},
		{"an OTLP table's name cased otherwise", "Traces", "Traces", "Traces"},
		{"empty", "", "", ""},
		{"not UTF-8", "a\xffb", "", ""},
		{"control character", "a\nb", "", ""},
		{"longest", strings.Repeat("a", layout.MaxFolderBytes), strings.Repeat("a", layout.MaxFolderBytes), strings.Repeat("a", layout.MaxFolderBytes)},
		{"too long", strings.Repeat("a", layout.MaxFolderBytes+1), "", ""},
		{"too long once encoded", strings.Repeat("é", 43), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				kind string
				fn   func(string) (string, error)
				want string
			}{{"database", layout.DatabaseFolder, tt.database}, {"measurement", layout.MeasurementFolder, tt.measurement}} {
				got, err := c.fn(tt.in)
				if c.want == "" {
					assert.ErrorIs(t, err, layout.ErrBadName, c.kind)
					assert.ErrorContains(t, err, c.kind, "the error names what was rejected")
					continue
				}
				require.NoError(t, err, c.kind)
				assert.Equal(t, c.want, got, c.kind)
				assert.LessOrEqual(t, len(got), layout.MaxFolderBytes)
				back, err := layout.NameOfFolder(got)
				require.NoError(t, err)
				assert.Equal(t, tt.in, back, "%s: the folder gives the name back", c.kind)
				assert.NoError(t, layout.CheckName(c.kind, got), "%s: the folder made passes the check", c.kind)
			}
		})
	}
}

func TestNameOfFolderRejectsBadEscapes(t *testing.T) {
	for _, folder := range []string{"a%", "a%2", "a%2f", "a%zz", "%G0"} {
		t.Run(folder, func(t *testing.T) {
			_, err := layout.NameOfFolder(folder)
			assert.ErrorIs(t, err, layout.ErrBadName)
		})
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		folder string
		ok     bool
	}{
		{"a database", "database", "default", true},
		{"an encoded database", "database", "disk%20io", true},
		{"the system folder", "database", layout.SystemDirName, false},
		{"the system folder encoded", "database", "%5Farcstore", true},
		{"an OTLP table as a table", "table", schema.TableLogs, true},
		{"an OTLP table as a measurement", "measurement", schema.TableLogs, false},
		{"a measurement named as an OTLP table", "table", "%6Cogs", true},
		{"a measurement", "measurement", "cpu", true},
		{"parent folder", "table", "..", false},
		{"current folder", "database", ".", false},
		{"a path of two elements", "table", "a/b", false},
		{"spelt another way: an unreserved byte encoded", "measurement", "cpu%41", false},
		{"spelt another way: lower-case hex", "measurement", "disk%2fio", false},
		{"empty", "database", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := layout.CheckName(tt.kind, tt.folder)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, layout.ErrBadName)
			assert.ErrorContains(t, err, tt.kind)
		})
	}
}
