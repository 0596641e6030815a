package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeBlocks returns the README's ```sh code blocks in order.
func readmeBlocks(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	require.NotEmpty(t, blocks, "README has sh code blocks")
	return blocks
}

// readmeCommand is the README's first command that starts with prefix.
func readmeCommand(t *testing.T, prefix string) string {
	t.Helper()
	for _, b := range readmeBlocks(t) {
		if strings.HasPrefix(b, prefix) {
			return strings.TrimSpace(b)
		}
	}
	t.Fatalf("README has no command starting with %q", prefix)
	return ""
}

// TestReadmeNewcomerPath runs what the README tells a newcomer to run after
// `make run`, as written: its telemetrygen command against the real
// collector and sidecar, then its DuckDB query in the directory above the
// data directory, and checks the answer counts every span sent. It also
// checks `make run` installs the tools those commands use.
func TestReadmeNewcomerPath(t *testing.T) {
	first := readmeBlocks(t)[0]
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(first), "\n") {
		cmds = append(cmds, strings.Fields(line)[0]+" "+strings.Fields(line)[1])
	}
	assert.Equal(t, []string{"make run", "make test"}, cmds, "the README's first screen is exactly the two commands")

	send := readmeCommand(t, ".tools/telemetrygen ")
	query := readmeCommand(t, ".tools/duckdb ")

	t.Run("make run installs the tools", func(t *testing.T) {
		mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
		require.NoError(t, err)
		run := regexp.MustCompile(`(?m)^run:(.*)$`).FindSubmatch(mk)
		require.NotNil(t, run, "Makefile has a run target")
		for _, tool := range []string{"telemetrygen", "duckdb"} {
			v := regexp.MustCompile(`(?m)^(\w+)\s*:=\s*\$\(TOOLS\)/` + tool + `\s*$`).FindSubmatch(mk)
			require.NotNil(t, v, "Makefile names .tools/%s", tool)
			assert.Contains(t, string(run[1]), "$("+string(v[1])+")", "make run installs .tools/%s, which the README uses next", tool)
		}
	})

	s := startStack(t)
	args := strings.Fields(send)[1:]
	for i, a := range args {
		if a == "localhost:4317" {
			args[i] = s.collector.otlpGRPC // make run's address, here a free port
		}
	}
	out, err := exec.Command(tool(t, "TELEMETRYGEN_BIN", "telemetrygen"), args...).CombinedOutput()
	require.NoError(t, err, "the README's telemetrygen command: %s", out)
	accepted := s.collector.waitDrained(t, 60*time.Second)
	require.EqualValues(t, 2000, accepted["spans"], "1000 traces of a root and a child span")
	s.sidecar.stop(t, 30*time.Second)

	m := regexp.MustCompile(`(?s)^\.tools/duckdb -c "(.*)"$`).FindStringSubmatch(query)
	require.NotNil(t, m, "the README's query is `.tools/duckdb -c \"...\"`: %s", query)
	require.Equal(t, "data", filepath.Base(s.sidecar.dataDir))
	cmd := exec.Command(tool(t, "DUCKDB_BIN", "duckdb"), "-json", "-c", m[1])
	cmd.Dir = filepath.Dir(s.sidecar.dataDir) // the README runs it in the clone, beside ./data
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	require.NoError(t, err, "the README's query: %s", stderr.String())
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(res, &rows), string(res))
	require.Len(t, rows, 1, "one service")
	assert.Equal(t, "telemetrygen", rows[0]["service_name"])
	assert.EqualValues(t, 2000, rows[0]["count_star()"])
	assert.Positive(t, rows[0]["p95_ms"])
}

// docFiles are the repository's Markdown files a reader opens.
func docFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repoRoot && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" || d.Name() == "results" || d.Name() == "data") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// anchor is GitHub's id for a Markdown heading.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestReadmeLinksAndWording checks every relative link of the docs points
// at a file (and heading) that exists, so moving a section cannot strand
// its links, and that the docs speak to readers: no internal planning
// names or issue numbers they cannot look up.
func TestReadmeLinksAndWording(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile("(?m)^#{1,6} (.+)$")
	internal := regexp.MustCompile(`\bBRIEF\b|[Tt]he specification|\b[Ii]ssue #?\d+|(^|\s)#\d+\b`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		a := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(data), ""), -1) {
			a[anchor(m[1])] = true
		}
		anchors[path] = a
		return a
	}
	for _, f := range docFiles(t) {
		rel, _ := filepath.Rel(repoRoot, f)
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(data), "")
		for _, m := range internal.FindAllString(text, -1) {
			t.Errorf("%s mentions %q, which readers cannot look up", rel, strings.TrimSpace(m))
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s links to %s, which does not exist", rel, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(dest, ".md") {
				assert.True(t, anchorsOf(dest)[frag], "%s links to %s: no such heading", rel, target)
			}
		}
	}
}
