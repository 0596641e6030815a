// Package compact merges the small files that flushes leave in a
// partition into one file per schema. Readers glob the partition folder,
// and POSIX has no way to replace several files at once, so the compactor
// replaces the folder instead: it builds the new contents in a staging
// folder (the merged file plus hard links to every file it did not merge)
// and swaps the two folders with one renameat2(RENAME_EXCHANGE). At every
// instant the partition path holds either the old files or the new ones,
// never both and never neither; a recorded intent tells recovery which
// side of the swap a crash fell on.
//
// It owns its intent (compact-intent.json), the staging folders under
// _arcstore/compact, and the merge outputs and sorted-run spills it makes
// in _arcstore/tmp. The store that runs it hands it a Guard and an FS.
//
// It must never import storage; touch the WAL, the sink cursors, the
// trash or a temp file it did not make; delete a file it did not replace
// by its own exchange (the replaced files may still be read by a sink's
// or the uploader's reader: they go with the staging folder only once
// the exchange is durable); hold the Guard's Tree lock while it merges
// (only while it swaps and settles a swap); or change a partition while
// a flush is half published (Guard.Unfinished).
package compact
