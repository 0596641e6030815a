package loss

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ClickHouse counts rows in the tables the sidecar's ClickHouse sink wrote,
// through ClickHouse's HTTP interface. Identities and filters are the same
// SQL as for DuckDB (map subscripts, ||, BETWEEN work in both).
type ClickHouse struct {
	// URL is the HTTP interface, e.g. http://127.0.0.1:8123.
	URL string
}

// Count returns the rows of database.table that satisfy where and the
// distinct values of identity among them, like Engine.Count. A table that
// does not exist has 0 rows.
func (c ClickHouse) Count(database, table string, identity Identity, where string) (found, distinct int64, err error) {
	found, distinct, _, err = c.CountInDoubt(database, table, identity, where, "")
	return found, distinct, err
}

// CountInDoubt is Count that also returns the distinct values of identity
// among the rows that satisfy doubt, like Engine.CountInDoubt.
func (c ClickHouse) CountInDoubt(database, table string, identity Identity, where, doubt string) (found, distinct, inDoubt int64, err error) {
	exists, err := c.query(fmt.Sprintf("EXISTS TABLE %s.%s", quoteIdent(database), quoteIdent(table)))
	if err != nil {
		return 0, 0, 0, err
	}
	if exists == "0" {
		if identity == "" {
			return 0, -1, 0, nil
		}
		return 0, 0, 0, nil
	}
	distinctSQL, doubtSQL := "-1", "0"
	if identity != "" {
		distinctSQL = fmt.Sprintf("uniqExact(%s)", identity)
		if doubt != "" {
			doubtSQL = fmt.Sprintf("uniqExactIf(%s, %s)", identity, doubt)
		}
	}
	q := fmt.Sprintf("SELECT count(), %s, %s FROM %s.%s", distinctSQL, doubtSQL, quoteIdent(database), quoteIdent(table))
	if where != "" {
		q += " WHERE " + where
	}
	out, err := c.query(q + " FORMAT TSV")
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := fmt.Sscanf(out, "%d\t%d\t%d", &found, &distinct, &inDoubt); err != nil {
		return 0, 0, 0, fmt.Errorf("clickhouse answered %q: %w", out, err)
	}
	return found, distinct, inDoubt, nil
}

// Parts returns the active parts of database.table, and of the tables
// named table_* beside it (a materialized view's target, such as the
// contrib exporter's trace id lookup), and their bytes on disk: what the
// rows cost there at this moment (merges go on in the background).
func (c ClickHouse) Parts(database, table string) (parts int, bytes int64, err error) {
	out, err := c.query(fmt.Sprintf("SELECT count(), sum(bytes_on_disk) FROM system.parts WHERE active AND database = %s AND (table = %s OR startsWith(table, %s)) FORMAT TSV",
		quoteString(database), quoteString(table), quoteString(table+"_")))
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscanf(out, "%d\t%d", &parts, &bytes); err != nil {
		return 0, 0, fmt.Errorf("clickhouse answered %q: %w", out, err)
	}
	return parts, bytes, nil
}

func (c ClickHouse) query(q string) (string, error) {
	resp, err := http.Post(strings.TrimSuffix(c.URL, "/")+"/?"+url.Values{"query": {q}}.Encode(), "text/plain", nil)
	if err != nil {
		return "", fmt.Errorf("clickhouse: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("clickhouse: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
