package schema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Type tags stored in the <set>_types maps and in body_type. A string value
// has no entry in a _types map (it is the common case and needs none); an
// array or map value's entry is its lossless OTLP/JSON AnyValue encoding,
// which always starts with '{'.
const (
	TypeString = "string"
	TypeInt    = "int"
	TypeDouble = "double"
	TypeBool   = "bool"
	TypeBytes  = "bytes"
	TypeEmpty  = "empty"
	TypeArray  = "array"
	TypeMap    = "map"
)

// ValueTypeName names a pcommon value type with the tags above.
func ValueTypeName(t pcommon.ValueType) string {
	switch t {
	case pcommon.ValueTypeStr:
		return TypeString
	case pcommon.ValueTypeInt:
		return TypeInt
	case pcommon.ValueTypeDouble:
		return TypeDouble
	case pcommon.ValueTypeBool:
		return TypeBool
	case pcommon.ValueTypeBytes:
		return TypeBytes
	case pcommon.ValueTypeSlice:
		return TypeArray
	case pcommon.ValueTypeMap:
		return TypeMap
	}
	return TypeEmpty
}

// AppendText appends the text rendering of v: what a query sees in
// attributes['key'] and in message. Strings are as sent (invalid UTF-8
// replaced by U+FFFD, since Parquet strings must be UTF-8); integers in
// decimal; doubles in the shortest form that parses back to the same value
// (NaN, +Inf, -Inf); bools as true/false; bytes in standard base64; arrays
// and maps as plain JSON; empty as "".
func AppendText(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return AppendValidUTF8(dst, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return appendFloat(dst, v.Double())
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(dst, v.Bool())
	case pcommon.ValueTypeBytes:
		return appendBase64(dst, v.Bytes())
	case pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
		return appendPlainJSON(dst, v)
	}
	return dst
}

// appendBase64 appends the standard base64 encoding of b. ByteSlice.AsRaw
// copies, so the bytes go through a stack buffer in chunks whose length is a
// multiple of 3: their encodings concatenate without padding in between.
func appendBase64(dst []byte, b pcommon.ByteSlice) []byte {
	var chunk [3 * 128]byte
	for start := 0; start < b.Len(); start += len(chunk) {
		n := min(len(chunk), b.Len()-start)
		for i := range n {
			chunk[i] = b.At(start + i)
		}
		dst = base64.StdEncoding.AppendEncode(dst, chunk[:n])
	}
	return dst
}

// AppendTypeTag appends the _types map entry of v and reports whether v needs
// one (every type but string does).
func AppendTypeTag(dst []byte, v pcommon.Value) ([]byte, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return dst, false
	case pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
		return AppendOTLPJSON(dst, v), true
	}
	return append(dst, ValueTypeName(v.Type())...), true
}

// AppendValidUTF8 appends s, replacing invalid UTF-8 sequences by U+FFFD.
func AppendValidUTF8(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// appendJSONString appends s as a JSON string, byte for byte what
// json.Marshal makes of AppendValidUTF8(s) (HTML characters, U+2028 and
// U+2029 escaped), without its allocations: it runs for every key and string
// inside an array or map value, on every row.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if !jsonSafe(b) {
				dst = appendJSONEscape(append(dst, s[start:i]...), rune(b))
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			dst = appendJSONEscape(append(dst, s[start:i]...), r)
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonSafe reports whether json.Marshal copies the ASCII byte b unescaped.
func jsonSafe(b byte) bool {
	return b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

// appendJSONEscape appends what json.Marshal writes for a character it
// escapes; an invalid byte (utf8.RuneError) becomes a literal U+FFFD.
func appendJSONEscape(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch r {
	case '\\', '"':
		return append(dst, '\\', byte(r))
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case utf8.RuneError:
		return utf8.AppendRune(dst, r)
	case '\u2028', '\u2029':
		return append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
	}
	return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
}

// appendPlainJSON renders arrays and maps as the JSON a person expects:
// {"a":1,"b":[true,"x"]}. Bytes become base64 strings, non-finite doubles
// strings; the exact types live in the _types map.
func appendPlainJSON(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendJSONString(dst, v.Str())
	case pcommon.ValueTypeInt, pcommon.ValueTypeBool:
		return AppendText(dst, v)
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, '"')
			return append(appendFloat(dst, f), '"')
		}
		return appendFloat(dst, f)
	case pcommon.ValueTypeBytes:
		dst = append(dst, '"')
		dst = appendBase64(dst, v.Bytes())
		return append(dst, '"')
	case pcommon.ValueTypeSlice:
		dst = append(dst, '[')
		s := v.Slice()
		for i := range s.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPlainJSON(dst, s.At(i))
		}
		return append(dst, ']')
	case pcommon.ValueTypeMap:
		dst = append(dst, '{')
		first := true
		v.Map().Range(func(k string, mv pcommon.Value) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendPlainJSON(dst, mv)
			return true
		})
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// AppendOTLPJSON appends the OTLP/JSON encoding of an AnyValue (the protobuf
// JSON mapping of opentelemetry.proto.common.v1.AnyValue): lossless for every
// type, including nested arrays and maps.
func AppendOTLPJSON(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		dst = append(dst, `{"stringValue":`...)
		dst = appendJSONString(dst, v.Str())
	case pcommon.ValueTypeInt:
		dst = append(dst, `{"intValue":"`...)
		dst = strconv.AppendInt(dst, v.Int(), 10)
		dst = append(dst, '"')
	case pcommon.ValueTypeDouble:
		dst = append(dst, `{"doubleValue":`...)
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, '"')
			dst = append(dst, protoJSONFloatName(f)...)
			dst = append(dst, '"')
		} else {
			dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
		}
	case pcommon.ValueTypeBool:
		dst = append(dst, `{"boolValue":`...)
		dst = strconv.AppendBool(dst, v.Bool())
	case pcommon.ValueTypeBytes:
		dst = append(dst, `{"bytesValue":"`...)
		dst = appendBase64(dst, v.Bytes())
		dst = append(dst, '"')
	case pcommon.ValueTypeSlice:
		dst = append(dst, `{"arrayValue":{"values":[`...)
		s := v.Slice()
		for i := range s.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendOTLPJSON(dst, s.At(i))
		}
		dst = append(dst, "]}"...)
	case pcommon.ValueTypeMap:
		dst = append(dst, `{"kvlistValue":{"values":[`...)
		first := true
		v.Map().Range(func(k string, mv pcommon.Value) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, `{"key":`...)
			dst = appendJSONString(dst, k)
			dst = append(dst, `,"value":`...)
			dst = AppendOTLPJSON(dst, mv)
			dst = append(dst, '}')
			return true
		})
		dst = append(dst, "]}"...)
	default:
		return append(dst, "{}"...)
	}
	return append(dst, '}')
}

func protoJSONFloatName(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	}
	return "-Infinity"
}

type otlpAnyValue struct {
	StringValue *string         `json:"stringValue"`
	IntValue    json.RawMessage `json:"intValue"`
	DoubleValue json.RawMessage `json:"doubleValue"`
	BoolValue   *bool           `json:"boolValue"`
	BytesValue  *string         `json:"bytesValue"`
	ArrayValue  *struct {
		Values []otlpAnyValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []struct {
			Key   string       `json:"key"`
			Value otlpAnyValue `json:"value"`
		} `json:"values"`
	} `json:"kvlistValue"`
}

// ParseOTLPJSON decodes an OTLP/JSON AnyValue into dst.
func ParseOTLPJSON(s string, dst pcommon.Value) error {
	var av otlpAnyValue
	if err := json.Unmarshal([]byte(s), &av); err != nil {
		return fmt.Errorf("decode OTLP/JSON value: %w", err)
	}
	return av.into(dst)
}

func (av *otlpAnyValue) into(dst pcommon.Value) error {
	switch {
	case av.StringValue != nil:
		dst.SetStr(*av.StringValue)
	case av.IntValue != nil:
		n, err := strconv.ParseInt(unquote(av.IntValue), 10, 64)
		if err != nil {
			return fmt.Errorf("decode intValue: %w", err)
		}
		dst.SetInt(n)
	case av.DoubleValue != nil:
		f, err := parseProtoJSONFloat(unquote(av.DoubleValue))
		if err != nil {
			return fmt.Errorf("decode doubleValue: %w", err)
		}
		dst.SetDouble(f)
	case av.BoolValue != nil:
		dst.SetBool(*av.BoolValue)
	case av.BytesValue != nil:
		b, err := base64.StdEncoding.DecodeString(*av.BytesValue)
		if err != nil {
			return fmt.Errorf("decode bytesValue: %w", err)
		}
		dst.SetEmptyBytes().FromRaw(b)
	case av.ArrayValue != nil:
		s := dst.SetEmptySlice()
		s.EnsureCapacity(len(av.ArrayValue.Values))
		for i := range av.ArrayValue.Values {
			if err := av.ArrayValue.Values[i].into(s.AppendEmpty()); err != nil {
				return err
			}
		}
	case av.KvlistValue != nil:
		m := dst.SetEmptyMap()
		m.EnsureCapacity(len(av.KvlistValue.Values))
		for i := range av.KvlistValue.Values {
			kv := &av.KvlistValue.Values[i]
			if err := kv.Value.into(m.PutEmpty(kv.Key)); err != nil {
				return err
			}
		}
	}
	return nil
}

func unquote(raw json.RawMessage) string {
	s := string(raw)
	if len(s) >= 2 && s[0] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

func parseProtoJSONFloat(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

// ErrBadTypeTag reports a _types entry that names no known type.
var ErrBadTypeTag = errors.New("unknown attribute type tag")

// ParseValue restores a value from its text rendering and its type tag
// ("" for a string).
func ParseValue(text, tag string, dst pcommon.Value) error {
	var err error
	switch {
	case tag == "" || tag == TypeString:
		dst.SetStr(text)
	case tag == TypeInt:
		var n int64
		n, err = strconv.ParseInt(text, 10, 64)
		dst.SetInt(n)
	case tag == TypeDouble:
		var f float64
		f, err = strconv.ParseFloat(text, 64)
		dst.SetDouble(f)
	case tag == TypeBool:
		var b bool
		b, err = strconv.ParseBool(text)
		dst.SetBool(b)
	case tag == TypeBytes:
		var b []byte
		b, err = base64.StdEncoding.DecodeString(text)
		dst.SetEmptyBytes().FromRaw(b)
	case tag == TypeEmpty:
	case len(tag) > 0 && tag[0] == '{':
		err = ParseOTLPJSON(tag, dst)
	default:
		err = fmt.Errorf("%w: %q", ErrBadTypeTag, tag)
	}
	return err
}

// ParseMap restores an attribute map from its two columns.
func ParseMap(text, tags map[string]string, dst pcommon.Map) error {
	dst.EnsureCapacity(len(text))
	for k, v := range text {
		if err := ParseValue(v, tags[k], dst.PutEmpty(k)); err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
	}
	return nil
}
