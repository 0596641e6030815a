package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set by the Makefile (-ldflags "-X main.version=..."), from
// git describe. Builds without it (go install ...@v1.2.3, go build) fall
// back to what the Go toolchain stamped into the binary.
var version string

// versionString is arcstore's version: the linker's, else the module's
// (a tagged go install), else the VCS revision go build recorded, else
// "devel".
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return buildInfoVersion(bi)
}

func buildInfoVersion(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev + dirty
}

// versionLine is what -version prints.
func versionLine() string {
	return fmt.Sprintf("arcstore %s (%s, %s/%s)", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
