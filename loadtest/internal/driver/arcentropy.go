package driver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"
)

// Shape is which generator an Arc run's batches come from.
type Shape string

// Shapes of Arc payloads.
const (
	// ShapeNew: every row new and its high-entropy strings per row, as the
	// independent harness that measured us against Arc sent them
	// (2026-11-27): logs with a random UUID and a 60-100 byte message of
	// random numbers and hex ids, traces with random trace and span ids,
	// thousands of distinct batches. Metrics and events have one shape.
	ShapeNew Shape = "new"
	// ShapeCycled: the batches up to 2026-11-27, 64 distinct ones cycled
	// by default and shorter log messages (35-72 bytes), kept so earlier
	// numbers can be reproduced.
	ShapeCycled Shape = "cycled"
)

// DefaultPayloads is how many distinct batches per measurement a shape
// generates unless told: ShapeNew as many as the independent harness
// (8 192 of 1 000 rows: 8.2 M distinct rows, ~20 s at 400 K rows/s).
func (s Shape) DefaultPayloads() int {
	if s == ShapeCycled {
		return 64
	}
	return 8192
}

// Message lengths of the new logs, in bytes.
const (
	MinLogMessage = 60
	MaxLogMessage = 100
)

// Value sets of the new shapes: Arc's own load scripts' (50 services for
// logs, 20 for traces with their operations, its weights), so the
// low-cardinality columns compress as they do there.
var (
	logServices  = numbered("service-", 50)
	logEnvs      = []string{"prod", "staging", "dev"}
	arcRegions   = []string{"us-east-1", "us-west-2", "eu-central-1", "ap-south-1"}
	logLevels    = weighted{{"DEBUG", 30}, {"INFO", 50}, {"WARN", 15}, {"ERROR", 4}, {"FATAL", 1}}
	okStatus     = []int64{200, 200, 200, 200, 200, 200, 200, 201, 204, 304}
	errStatus    = []int64{400, 401, 403, 404, 500, 502, 503, 504}
	traceOK      = []int64{200, 201, 204}
	spanKinds    = weighted{{"server", 40}, {"client", 30}, {"internal", 20}, {"producer", 5}, {"consumer", 5}}
	traceEnvs    = []string{"production", "staging", "development"}
	traceMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH"}
	traceService = []string{"api-gateway", "auth-service", "user-service", "product-service", "order-service",
		"payment-service", "inventory-service", "notification-service", "email-service", "sms-service",
		"analytics-service", "recommendation-service", "search-service", "cache-service", "database-service",
		"queue-service", "storage-service", "cdn-service", "logging-service", "monitoring-service"}
	operations = map[string][]string{
		"api-gateway":          {"HTTP GET", "HTTP POST", "HTTP PUT", "HTTP DELETE", "route_request", "authenticate"},
		"auth-service":         {"verify_token", "login", "logout", "refresh_token", "validate_session"},
		"user-service":         {"get_user", "create_user", "update_user", "delete_user", "list_users"},
		"product-service":      {"get_product", "search_products", "update_inventory", "check_availability"},
		"order-service":        {"create_order", "get_order", "update_order", "cancel_order", "process_payment"},
		"payment-service":      {"charge_card", "refund", "validate_payment", "process_transaction"},
		"inventory-service":    {"check_stock", "reserve_items", "release_items", "update_stock"},
		"notification-service": {"send_notification", "queue_message", "deliver_message"},
		"email-service":        {"send_email", "render_template", "queue_email"},
		"database-service":     {"SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT"},
		"cache-service":        {"get", "set", "delete", "flush"},
	}
	defaultOperations = []string{"process", "execute", "handle_request", "query"}
	// Words the log templates pick from.
	tables    = []string{"orders", "users", "payments", "sessions", "inventory", "shipments"}
	currency  = []string{"USD", "EUR", "GBP", "JPY"}
	declines  = []string{"insufficient funds", "card expired", "fraud check failed", "issuer unavailable"}
	providers = []string{"password", "oauth2", "saml", "api-key"}
)

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// weighted picks values in proportion to their weights.
type weighted []struct {
	v string
	w int
}

func (ws weighted) pick(r *rand.Rand) string {
	total := 0
	for _, x := range ws {
		total += x.w
	}
	n := r.IntN(total)
	for _, x := range ws {
		if n < x.w {
			return x.v
		}
		n -= x.w
	}
	return ws[len(ws)-1].v
}

// line builds a log message from literal parts and random fields.
type line []byte

func (l line) s(v string) line { return append(l, v...) }
func (l line) n(r *rand.Rand, below int) line {
	return strconv.AppendInt(l, int64(r.IntN(below)), 10)
}
func (l line) hex(r *rand.Rand, digits int) line {
	const hexDigits = "0123456789abcdef"
	var v uint64
	for i := range digits {
		if i%16 == 0 {
			v = r.Uint64()
		}
		l = append(l, hexDigits[v&0xf])
		v >>= 4
	}
	return l
}

// logLines are the seven message templates of the new logs, each filled
// with random numbers and hex ids: 64-95 bytes whatever the draw (their
// shortest and longest fillings), ~80 on average.
var logLines = []func(l line, r *rand.Rand) line{
	func(l line, r *rand.Rand) line {
		return l.s(traceMethods[r.IntN(len(traceMethods))]).s(" /api/v1/").s(tables[r.IntN(len(tables))]).s("/").n(r, 10_000_000).
			s(" completed ").n(r, 600).s(" in ").n(r, 5000).s(" ms request=").hex(r, 16)
	},
	func(l line, r *rand.Rand) line {
		return l.s("user ").n(r, 100_000_000).s(" authenticated from 10.").n(r, 256).s(".").n(r, 256).s(".").n(r, 256).
			s(" via ").s(providers[r.IntN(len(providers))]).s(" session=").hex(r, 24)
	},
	func(l line, r *rand.Rand) line {
		return l.s("order ").hex(r, 12).s(" placed: ").n(r, 20).s(" items, total ").n(r, 100_000).s(".").n(r, 100).
			s(" ").s(currency[r.IntN(len(currency))]).s(", payment ").hex(r, 16)
	},
	func(l line, r *rand.Rand) line {
		return l.s("cache miss for key session:").hex(r, 32).s(" after ").n(r, 100_000).s(" us, shard ").n(r, 64)
	},
	func(l line, r *rand.Rand) line {
		return l.s("upstream ").s(traceService[r.IntN(len(traceService))]).s(" answered ").n(r, 600).s(" after ").n(r, 30_000).
			s(" ms on attempt ").n(r, 10).s(", span ").hex(r, 16)
	},
	func(l line, r *rand.Rand) line {
		return l.s("payment ").hex(r, 20).s(" declined by issuer ").n(r, 10_000).s(": ").s(declines[r.IntN(len(declines))]).
			s(" (card ").n(r, 10_000).s(")")
	},
	func(l line, r *rand.Rand) line {
		return l.s("query ").hex(r, 8).s(" on ").s(tables[r.IntN(len(tables))]).s(" took ").n(r, 10_000).s(" ms, scanned ").
			n(r, 10_000_000).s(" rows, plan ").hex(r, 12)
	},
}

// newLogMessage draws one message of the new logs into buf.
func newLogMessage(buf []byte, r *rand.Rand) []byte {
	return logLines[r.IntN(len(logLines))](buf[:0], r)
}

// randomUUID is a version 4 UUID drawn from r, so payloads are
// reproducible per seed.
func randomUUID(r *rand.Rand) string {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[:8], r.Uint64())
	binary.BigEndian.PutUint64(u[8:], r.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u.String()
}

// column is one named column of a batch; the new shape's batches list
// them in the order of Arc's load scripts (whose Python dicts keep it), so
// a seed gives the same bytes every time.
type column struct {
	name   string
	values any
}

// encodeColumns is a batch as MessagePack: {"m": name, "columns": {...}}
// with the columns in their order.
func encodeColumns(s Signal, cols []column) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	err := errors.Join(enc.EncodeMapLen(2), enc.EncodeString("m"), enc.EncodeString(string(s)),
		enc.EncodeString("columns"), enc.EncodeMapLen(len(cols)))
	for _, c := range cols {
		err = errors.Join(err, enc.EncodeString(c.name), enc.Encode(c.values))
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", s, err)
	}
	return buf.Bytes(), nil
}

// newLogColumns is application_logs with every row new: a random UUID
// request id and a message of random numbers and hex ids per row, Arc's
// level weights and value sets, a float response time and an integer
// status code. Times are nanoseconds within the minute before now.
func newLogColumns(n int, now time.Time, r *rand.Rand) []column {
	var (
		times    = make([]int64, n)
		level    = make([]string, n)
		service  = make([]string, n)
		env      = make([]string, n)
		region   = make([]string, n)
		message  = make([]string, n)
		respTime = make([]float64, n)
		status   = make([]int64, n)
		request  = make([]string, n)
		buf      []byte
	)
	for i := range n {
		times[i] = now.Add(-time.Duration(r.Int64N(int64(time.Minute)))).UnixNano()
		level[i] = logLevels.pick(r)
		service[i] = logServices[r.IntN(len(logServices))]
		env[i] = logEnvs[r.IntN(len(logEnvs))]
		region[i] = arcRegions[r.IntN(len(arcRegions))]
		buf = newLogMessage(buf, r)
		message[i] = string(buf)
		if level[i] == "ERROR" || level[i] == "FATAL" {
			status[i] = errStatus[r.IntN(len(errStatus))]
			respTime[i] = 500 + 4500*r.Float64()
		} else {
			status[i] = okStatus[r.IntN(len(okStatus))]
			respTime[i] = 10 + 490*r.Float64()
		}
		request[i] = randomUUID(r)
	}
	return []column{{"time", times}, {"level", level}, {"service", service}, {"environment", env}, {"region", region},
		{"message", message}, {"response_time_ms", respTime}, {"status_code", status}, {"request_id", request}}
}

// newTraceColumns is distributed_traces with Arc's 13 columns and a random
// trace id (32 hex digits) and span id (16) per row; 30 % of spans name a
// parent. Services, operations, kinds and durations follow Arc's script.
// Times are milliseconds within the minute before now.
func newTraceColumns(n int, now time.Time, r *rand.Rand) []column {
	var (
		times    = make([]int64, n)
		traceID  = make([]string, n)
		spanID   = make([]string, n)
		parent   = make([]string, n)
		service  = make([]string, n)
		op       = make([]string, n)
		kind     = make([]string, n)
		duration = make([]int64, n)
		status   = make([]int64, n)
		method   = make([]string, n)
		env      = make([]string, n)
		region   = make([]string, n)
		isErr    = make([]bool, n)
		buf      line
	)
	for i := range n {
		times[i] = now.Add(-time.Duration(r.Int64N(int64(time.Minute)))).UnixMilli()
		traceID[i] = string(buf[:0].hex(r, 32))
		spanID[i] = string(buf[:0].hex(r, 16))
		if r.IntN(10) < 3 {
			parent[i] = string(buf[:0].hex(r, 16))
		}
		svc := traceService[r.IntN(len(traceService))]
		ops, ok := operations[svc]
		if !ok {
			ops = defaultOperations
		}
		service[i], op[i], kind[i] = svc, ops[r.IntN(len(ops))], spanKinds.pick(r)
		switch svc {
		case "database-service", "cache-service":
			duration[i] = 1_000_000 + r.Int64N(49_000_000)
		case "api-gateway":
			duration[i] = 10_000_000 + r.Int64N(490_000_000)
		default:
			duration[i] = 5_000_000 + r.Int64N(195_000_000)
		}
		if kind[i] == "server" || kind[i] == "client" {
			method[i] = traceMethods[r.IntN(len(traceMethods))]
			status[i] = traceOK[r.IntN(len(traceOK))]
			if r.IntN(20) == 0 {
				status[i], isErr[i] = errStatus[r.IntN(len(errStatus))], true
				duration[i] = duration[i] * int64(15+r.IntN(16)) / 10
			}
		} else {
			isErr[i] = r.IntN(50) == 0
		}
		env[i] = traceEnvs[r.IntN(len(traceEnvs))]
		region[i] = arcRegions[r.IntN(len(arcRegions))]
	}
	return []column{{"time", times}, {"trace_id", traceID}, {"span_id", spanID}, {"parent_span_id", parent},
		{"service_name", service}, {"operation_name", op}, {"span_kind", kind}, {"duration_ns", duration},
		{"status_code", status}, {"http_method", method}, {"environment", env}, {"region", region}, {"error", isErr}}
}
