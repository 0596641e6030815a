package receiver

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInfluxPingAndCreateDatabase: Telegraf's influxdb output creates its
// database through /query at start-up and InfluxDB clients check /ping;
// both got 404 (issue 31 item 7).
func TestInfluxPingAndCreateDatabase(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	f := newWriteFixture(t, tokens, 0, 0, 0)
	do := func(method, path, body string, auth bool) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if auth {
			req.SetBasicAuth("telegraf", "s3cret")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, strings.TrimSpace(string(raw))
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp, body := do(method, PathPing, "", false)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode, method)
		assert.Equal(t, InfluxVersion, resp.Header.Get("X-Influxdb-Version"), method)
		assert.Empty(t, body)
	}
	resp, body := do(http.MethodGet, PathPing+"?verbose=true", "", false)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"version":"`+InfluxVersion+`"}`, body)

	q := func(stmt string) string { return url.Values{"q": {stmt}}.Encode() }
	for _, stmt := range []string{`CREATE DATABASE "telegraf"`, `create database telegraf;`, `CREATE DATABASE "a \"b\"" WITH DURATION 7d`} {
		resp, body = do(http.MethodPost, PathQuery, q(stmt), true)
		assert.Equal(t, http.StatusOK, resp.StatusCode, stmt)
		assert.JSONEq(t, `{"results":[{"statement_id":0}]}`, body, stmt)
		assert.Equal(t, InfluxVersion, resp.Header.Get("X-Influxdb-Version"))
	}
	resp, body = do(http.MethodPost, PathQuery+"?"+q(`CREATE DATABASE "in the URL"`), "", true)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = do(http.MethodPost, PathQuery, q("CREATE DATABASE \"a\\nb\""), true)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"error":"bad name: database name \"a\\nb\" has a control character`, "InfluxDB's shape: a statement's error in its result")
	for _, stmt := range []string{"SHOW DATABASES", "SELECT * FROM cpu", `CREATE DATABASE "x`, "CREATE DATABASE a; DROP DATABASE b", ""} {
		resp, body = do(http.MethodPost, PathQuery, q(stmt), true)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, stmt)
		assert.Contains(t, body, `"error"`, stmt)
	}
	resp, _ = do(http.MethodPost, PathQuery, q(`CREATE DATABASE "telegraf"`), false)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "/query takes the tokens /write takes")
	resp, _ = do(http.MethodPost, PathWriteInfluxV1+"?db=d", "cpu v=1", true)
	assert.Equal(t, InfluxVersion, resp.Header.Get("X-Influxdb-Version"), "as InfluxDB, every answer of the InfluxDB API says its version")
	assert.Empty(t, f.rows(t)["telegraf/cpu"], "CREATE DATABASE writes nothing")
}
