package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
}

// publishStep moves a durable temp file to its final name.
type publishStep struct {
	Temp  string `json:"temp"`
	Final string `json:"final"`
}

func (fl *flusher) intentPath() string { return filepath.Join(fl.sysDir, intentName) }

func (fl *flusher) writeIntent(in *flushIntent) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode flush intent: %w", err)
	}
	if err := writeFileAtomic(fl.fs, fl.intentPath(), data); err != nil {
		return fmt.Errorf("write flush intent: %w", err)
	}
	return nil
}

// errPublishUnfinished stops compaction and retention while a flush whose
// intent is durable has not finished publishing: recovery tells a step done
// from a step lost by its files, so they must stay where the flush put them.
var errPublishUnfinished = errors.New("a flush is not finished publishing; partitions are left alone until it is")

// unfinished is errPublishUnfinished while that is so; flushMu held.
func (fl *flusher) unfinished() error {
	if fl.pending != nil && fl.pending.intent != nil {
		return errPublishUnfinished
	}
	return nil
}

// removeIntent drops the intent of a flush that did not happen.
func (fl *flusher) removeIntent() {
	if err := fl.fs.Remove(fl.intentPath()); err == nil {
		_ = fl.fs.SyncDir(fl.sysDir)
	}
}

// publish renames every temp file of the intent into place, fsyncs the
// directories it touched, then drops the WAL segments and the intent. It is
// idempotent: a step whose temp file is gone was done before a crash.
func (fl *flusher) publish(in *flushIntent) error {
	dirs := map[string]bool{}
	for _, st := range in.Files {
		err := fl.fs.Rename(st.Temp, st.Final)
		if errors.Is(err, os.ErrNotExist) && fl.exists(st.Temp) {
			// The partition folder was deleted from outside since the
			// flush made it: make it again rather than fail every retry
			// (and every start) on it.
			dir := filepath.Dir(st.Final)
			delete(fl.madeDirs, dir)
			if err = fl.mkdirDurable(dir); err == nil {
				err = fl.fs.Rename(st.Temp, st.Final)
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("publish %s: %w", st.Final, err)
		}
		dirs[filepath.Dir(st.Final)] = true
	}
	for d := range dirs {
		// A folder that is gone holds nothing of this flush any more (its
		// step was done before a crash, then the folder deleted): there is
		// nothing to make durable in it.
		if err := fl.fs.SyncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sync partition dir: %w", err)
		}
	}
	if err := fl.markDone(in.LastSeq); err != nil {
		return err
	}
	if err := fl.fs.Remove(fl.intentPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove flush intent: %w", err)
	}
	return fl.fs.SyncDir(fl.sysDir)
}

// recover finishes a flush that a crash interrupted.
func (fl *flusher) recover() error {
	data, err := fl.fs.ReadFile(fl.intentPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read flush intent: %w", err)
	}
	var in flushIntent
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("decode flush intent: %w", err)
	}
	if lost := fl.unpublishable(&in); len(lost) > 0 {
		// A step with neither its temp nor its final file cannot be
		// finished. Dropping the WAL segments would lose its rows;
		// replaying them can only repeat rows of steps that were done.
		fl.log.Error("an interrupted flush names files that are gone; its wal segments are replayed instead (rows of its other files may appear twice)",
			"missing", lost, "last_wal_segment", in.LastSeq)
		fl.removeIntent()
		return nil
	}
	fl.log.Info("finishing an interrupted flush", "files", len(in.Files), "last_wal_segment", in.LastSeq)
	return fl.publish(&in)
}

// unpublishable returns the final names of steps that have neither file.
func (fl *flusher) unpublishable(in *flushIntent) []string {
	var lost []string
	for _, st := range in.Files {
		if !fl.exists(st.Temp) && !fl.exists(st.Final) {
			lost = append(lost, st.Final)
		}
	}
	return lost
}

func (fl *flusher) exists(path string) bool {
	f, err := fl.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
