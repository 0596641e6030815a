package storage

import "github.com/arc-otel/arc-otel/storage/layout"

// Database and measurement names map to folders by layout's rules.

// MaxFolderBytes bounds a folder name: NAME_MAX of ext4, XFS and APFS.
const MaxFolderBytes = layout.MaxFolderBytes

// ErrBadName reports a database or measurement name that cannot be
// stored, or a folder name the sidecar did not make.
var ErrBadName = layout.ErrBadName

// DatabaseFolder returns the folder a database is stored under.
func DatabaseFolder(name string) (string, error) { return layout.DatabaseFolder(name) }

// MeasurementFolder returns the folder a measurement's table is stored
// under, beside the OTLP tables of its database.
func MeasurementFolder(name string) (string, error) { return layout.MeasurementFolder(name) }

// NameOfFolder returns the name a database or measurement folder stores.
func NameOfFolder(folder string) (string, error) { return layout.NameOfFolder(folder) }

// CheckName rejects a folder name the sidecar would not make for a
// database or table (layout.CheckName).
func CheckName(kind, folder string) error { return layout.CheckName(kind, folder) }
