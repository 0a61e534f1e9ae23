package herald_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDoc_NamesWhatImportingTheClientPullsIn keeps the package doc's list
// of what the client pulls in true: every third-party module the package
// depends on is named there (by the words a reader knows it by), so a new
// dependency cannot arrive unsaid.
func TestDoc_NamesWhatImportingTheClientPullsIn(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " ")

	// Each module, and the words of the doc that name it. Modules that come
	// only as a named module's own dependencies say which.
	namedBy := map[string]string{
		"github.com/jackc/pgx/v5":         "pgx",
		"github.com/jackc/pgerrcode":      "pgx",
		"github.com/jackc/pgpassfile":     "pgx",
		"github.com/jackc/pgservicefile":  "pgx",
		"github.com/jackc/puddle/v2":      "pgx",
		"golang.org/x/sync":               "pgx",
		"github.com/nyaruka/phonenumbers": "github.com/nyaruka/phonenumbers",
		"google.golang.org/protobuf":      "with protobuf",
		"go.opentelemetry.io/otel":        "OpenTelemetry API (go.opentelemetry.io/otel",
		"go.opentelemetry.io/otel/trace":  "trace, metric and log API modules",
		"go.opentelemetry.io/otel/metric": "trace, metric and log API modules",
		"go.opentelemetry.io/otel/log":    "trace, metric and log API modules",
		"go.opentelemetry.io/auto/sdk":    "OpenTelemetry API",
		"github.com/go-logr/logr":         "OpenTelemetry API",
		"github.com/go-logr/stdr":         "OpenTelemetry API",
		"github.com/cespare/xxhash/v2":    "OpenTelemetry API",
		"github.com/mtibben/confusables":  "confusables",
		"github.com/google/uuid":          "uuid",
		"golang.org/x/text":               "golang.org/x/text",
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}", ".").Output()
	require.NoError(t, err)
	for _, mod := range strings.Fields(string(out)) {
		if mod == "github.com/heraldhq/herald" {
			continue
		}
		words, ok := namedBy[mod]
		require.True(t, ok, "the client now pulls in %s: say so in doc.go's list and add it here", mod)
		require.Contains(t, text, words, "doc.go should name %s", mod)
	}
}
