package storage

import "github.com/apache/arrow-go/v18/arrow"

// Batch is one record batch of AppendAll.
type Batch struct {
	ID       BatchID
	Database string
	Table    *Table
	IPC      []byte
	Rec      arrow.RecordBatch
	// LegacyID is the ID an earlier version gave the batch
	// (LegacyBatchID), set while Store.LegacyBatchIDs reports such IDs:
	// the batch is also a copy when that ID was stored. It is not
	// remembered.
	LegacyID BatchID
	// Deduplicated is set by AppendAll when the batch was acknowledged
	// without a second copy: it was byte-identical to one already stored.
	Deduplicated bool
}

// maxGroup bounds the requests one WAL commit takes (and the committer's
// queue).
const maxGroup = 256

type appendReq struct {
	id       BatchID
	dup      bool   // a copy of a stored batch: acknowledged, not written
	batch    *Batch // the caller's, told whether it was a copy
	database string
	table    *Table
	ipc      []byte
	rec      arrow.RecordBatch
	done     chan error
	// request is, on a request's first batch, every batch of it (itself
	// first): they go to the WAL as one record.
	request []*appendReq
}

func (r *appendReq) batches() []*appendReq { return r.request }
