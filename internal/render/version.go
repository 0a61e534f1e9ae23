package render

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/heraldhq/herald/schema"
)

// VersionInfo is what `herald version` prints: the binary's build and the
// schema versions.
type VersionInfo struct {
	// Version is the main module's version, "devel" for a build from a
	// work tree (go build, go run).
	Version string `json:"version"`
	// Commit and CommitTime are the VCS revision the binary was built
	// from, empty when the build did not record it; Modified says the
	// work tree had changes.
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time"`
	Modified   bool   `json:"modified"`
	GoVersion  string `json:"go_version"`
	// SchemaVersion is the highest herald migration the binary carries.
	SchemaVersion int64 `json:"schema_version"`
	// DatabaseSchemaVersion is the database's, when one is given.
	DatabaseSchemaVersion *int64 `json:"database_schema_version,omitempty"`
}

// BuildVersion returns what the Go toolchain recorded in the running
// binary, with the schema version it carries; only Version, GoVersion and
// SchemaVersion when the binary has no build information.
func BuildVersion() *VersionInfo {
	v := &VersionInfo{Version: "devel", GoVersion: runtime.Version(), SchemaVersion: schema.LatestVersion()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
		v.Version = mv
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// Short returns v in one line, as a serve process's row records it:
// "v1.4.0 (commit 1a2b3c4d5e6f, schema 39)", "devel (commit …
// modified, schema 39)", or without the commit when unknown.
func (v *VersionInfo) Short() string {
	commit := v.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		return fmt.Sprintf("%s (schema %d)", v.Version, v.SchemaVersion)
	}
	if v.Modified {
		commit += " modified"
	}
	return fmt.Sprintf("%s (commit %s, schema %d)", v.Version, commit, v.SchemaVersion)
}

// Version writes v as `herald version` shows it: one "name: value" line
// each, the database's schema version only when known.
func Version(w io.Writer, v *VersionInfo) error {
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
	} else if v.Modified {
		commit += " (modified)"
	}
	if v.CommitTime != "" {
		commit += ", " + v.CommitTime
	}
	fmt.Fprintf(w, "herald %s\ncommit:   %s\ngo:       %s\nschema:   version %d\n", v.Version, commit, v.GoVersion, v.SchemaVersion)
	if v.DatabaseSchemaVersion != nil {
		fmt.Fprintf(w, "database: schema version %d\n", *v.DatabaseSchemaVersion)
	}
	return nil
}
