// Package arcmsgpack decodes Arc's MessagePack write payloads: the columnar
// format ({"m": measurement, "columns": {"time": [...], ...}}), the row
// format ({"m", "t", "fields", "tags"}), arrays of either or both, and
// {"batch": [...]}, into columns (Measurement) and Arrow record batches,
// one per measurement, with errors that name the measurement, column and
// row at fault. Every allocation is charged to a per-request Budget first,
// so a payload cannot make the decoder take more memory than its budget.
// Rows also gathers other row-shaped input (line protocol) into the same
// columns.
package arcmsgpack
