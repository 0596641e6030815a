package storage

import "github.com/arc-otel/arc-otel/storage/layout"

// File is the part of *os.File that storage uses (layout.File).
type File = layout.File

// FS is the file system storage works on (layout.FS).
type FS = layout.FS

// OSFS is the real file system.
type OSFS = layout.OSFS

// writeFileAtomic is layout.WriteFileAtomic.
func writeFileAtomic(fsys FS, path string, data []byte) error {
	return layout.WriteFileAtomic(fsys, path, data)
}
