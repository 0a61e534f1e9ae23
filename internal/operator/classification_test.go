package operator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/logch"
)

func TestClassifications_CoverEveryDefinedClass(t *testing.T) {
	t.Parallel()
	// Every Class* string constant of the channels and the dispatcher,
	// with the outcome class its comment documents.
	documented := regexp.MustCompile(`\((Transient|Permanent)\b`)
	found := 0
	for _, dir := range []string{"channel", "channel/*", "callback", "dispatch"} {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ParseComments)
			require.NoError(t, err)
			ast.Inspect(file, func(n ast.Node) bool {
				gd, ok := n.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					return true
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					lit, ok := valueLit(vs)
					if !ok || !strings.HasPrefix(vs.Names[0].Name, "Class") {
						continue
					}
					doc := vs.Doc.Text() + gd.Doc.Text()
					if lit == channel.ClassNoAddress || lit == logch.ClassLogged || strings.Contains(doc, "skipped") || strings.Contains(doc, "(Skip)") || strings.Contains(doc, "Delivered") {
						continue // never a dead letter's
					}
					found++
					classes, known := failureClasses[lit]
					require.True(t, known, "%s: %s = %q is missing from failureClasses", f, vs.Names[0].Name, lit)
					if m := documented.FindStringSubmatch(vs.Doc.Text()); m != nil {
						want := map[string]channel.Class{"Transient": channel.Transient, "Permanent": channel.Permanent}[m[1]]
						require.Contains(t, classes, want, "%s: %s documents %s", f, lit, m[1])
					}
				}
				return true
			})
		}
	}
	require.Greater(t, found, 30)
}

func valueLit(vs *ast.ValueSpec) (string, bool) {
	if len(vs.Values) != 1 {
		return "", false
	}
	lit, ok := vs.Values[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	return strings.Trim(lit.Value, `"`), true
}
