// Package arcmsgpack decodes Arc's MessagePack columnar write payloads
// ({"m": measurement, "columns": {"time": [...], ...}}, arrays of them, or
// {"batch": [...]}) into Arrow record batches, one per measurement, with
// errors that name the measurement, column and row at fault.
package arcmsgpack
