package storage

import (
	"encoding/json"
	"errors"
	"fmt"
)

// flushIntent is the redo record of a flush. Written after every temp file
// is durable and before the first rename, it lets recovery finish a flush
// that a crash interrupted, so the WAL segments it covers are never replayed
// into a second copy of the rows.
type flushIntent struct {
	// LastSeq is the last WAL segment whose rows the files hold.
	LastSeq uint64        `json:"last_seq"`
	Files   []publishStep `json:"files"`
}

// publishStep moves a durable temp file to its final name.
type publishStep struct {
	Temp  string `json:"temp"`
	Final string `json:"final"`
}

// errPublishUnfinished stops compaction and retention while a flush whose
// intent is durable has not finished publishing: recovery tells a step done
// from a step lost by its files, so they must stay where the flush put them.
var errPublishUnfinished = errors.New("a flush is not finished publishing; partitions are left alone until it is")

func (in *flushIntent) encode() ([]byte, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode flush intent: %w", err)
	}
	return data, nil
}

func decodeFlushIntent(data []byte) (*flushIntent, error) {
	var in flushIntent
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("decode flush intent: %w", err)
	}
	return &in, nil
}
