package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// flushIntent is the redo record of a flush. Written after every temp file
// is durable and before the first rename, it lets recovery finish a flush
// that a crash interrupted, so the WAL segments it covers are never replayed
// into a second copy of the rows.
type flushIntent struct {
	// LastSeq is the last WAL segment whose rows the files hold.
	LastSeq uint64        `json:"last_seq"`
	Files   []publishStep `json:"files"`
	// Relative says the files' paths are relative to the data directory,
	// as this build writes them, so that recovery finds them wherever the
	// directory is opened from (restored or mounted elsewhere, or named
	// relative to another working directory). Earlier builds wrote the
	// paths as the directory was named then; they are read as they are.
	Relative bool `json:"relative,omitempty"`
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

// encode writes the intent with its paths relative to the data directory
// dir.
func (in *flushIntent) encode(dir string) ([]byte, error) {
	out := flushIntent{LastSeq: in.LastSeq, Relative: true, Files: make([]publishStep, len(in.Files))}
	for i, st := range in.Files {
		temp, err := filepath.Rel(dir, st.Temp)
		if err != nil {
			return nil, fmt.Errorf("encode flush intent: %w", err)
		}
		final, err := filepath.Rel(dir, st.Final)
		if err != nil {
			return nil, fmt.Errorf("encode flush intent: %w", err)
		}
		out.Files[i] = publishStep{Temp: temp, Final: final}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode flush intent: %w", err)
	}
	return data, nil
}

// decodeFlushIntent reads an intent of the data directory dir, its paths
// under dir.
func decodeFlushIntent(data []byte, dir string) (*flushIntent, error) {
	var in flushIntent
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("decode flush intent: %w", err)
	}
	if in.Relative {
		for i, st := range in.Files {
			if !filepath.IsLocal(st.Temp) || !filepath.IsLocal(st.Final) {
				return nil, fmt.Errorf("decode flush intent: step %d leaves the data directory: %q, %q", i, st.Temp, st.Final)
			}
			in.Files[i] = publishStep{Temp: filepath.Join(dir, st.Temp), Final: filepath.Join(dir, st.Final)}
		}
		in.Relative = false
	}
	return &in, nil
}
