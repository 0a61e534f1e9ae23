package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/heraldhq/herald/schema"
)

func init() {
	register(&command{
		name:     "version",
		summary:  "print herald's version, commit, Go version and schema version (and the database's, given one)",
		example:  "herald version --json",
		readOnly: true,
		run:      runVersion,
	})
}

// versionInfo is what `herald version` prints.
type versionInfo struct {
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

// buildVersion reads what the Go toolchain recorded in the binary.
func buildVersion() *versionInfo {
	v := &versionInfo{Version: "devel", GoVersion: runtime.Version(), SchemaVersion: schema.LatestVersion()}
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

func runVersion(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("version", &g)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	v := buildVersion()
	// Without a database the binary's own facts are the whole answer.
	if m.hasTarget(&g) {
		pool, err := m.connect(ctx, &g, nil)
		if err != nil {
			return err
		}
		have, err := schema.AppliedVersion(ctx, pool)
		if err != nil {
			return err
		}
		v.DatabaseSchemaVersion = &have
	}
	return output(m, g.JSON, v, writeVersion)
}

func writeVersion(w io.Writer, v *versionInfo) error {
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
