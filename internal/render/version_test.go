package render_test

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/schema"
)

func TestVersion_WritesBuildAndSchema(t *testing.T) {
	t.Parallel()
	v := render.BuildVersion()
	require.Equal(t, runtime.Version(), v.GoVersion)
	require.Equal(t, schema.LatestVersion(), v.SchemaVersion)
	require.Nil(t, v.DatabaseSchemaVersion)

	var b bytes.Buffer
	require.NoError(t, render.Version(&b, &render.VersionInfo{Version: "v1.2.0", Commit: "abc123", CommitTime: "2026-01-02T03:04:05Z",
		Modified: true, GoVersion: "go1.25.0", SchemaVersion: 34}))
	require.Equal(t, "herald v1.2.0\ncommit:   abc123 (modified), 2026-01-02T03:04:05Z\ngo:       go1.25.0\nschema:   version 34\n", b.String())

	b.Reset()
	have := int64(30)
	require.NoError(t, render.Version(&b, &render.VersionInfo{Version: "devel", GoVersion: "go1.25.0", SchemaVersion: 34, DatabaseSchemaVersion: &have}))
	require.Equal(t, "herald devel\ncommit:   unknown\ngo:       go1.25.0\nschema:   version 34\ndatabase: schema version 30\n", b.String())
}
