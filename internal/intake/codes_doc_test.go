package intake

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFailureCodesAreTheSameInCodesErrorGoDocGoAndREADME checks the
// failure codes' one source, Codes, against the places that repeat it: the
// herald package's re-exported constants (error.go), its package
// documentation (doc.go) and README's table. A code added to one and not
// the others fails here.
func TestFailureCodesAreTheSameInCodesErrorGoDocGoAndREADME(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")

	// error.go: every `CodeX = intake.CodeX`, mapped to its value through
	// this package's constants (validate.go).
	values := map[string]string{} // intake constant name → code
	validateGo, err := parser.ParseFile(token.NewFileSet(), "validate.go", nil, 0)
	require.NoError(t, err)
	ast.Inspect(validateGo, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && len(vs.Values) == 1 &&
			strings.HasPrefix(vs.Names[0].Name, "Code") {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				values[vs.Names[0].Name], _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	errorGo, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "error.go"), nil, 0)
	require.NoError(t, err)
	var exported []string
	ast.Inspect(errorGo, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
			return true
		}
		if sel, ok := vs.Values[0].(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Code") {
			require.Equal(t, sel.Sel.Name, vs.Names[0].Name, "error.go re-exports a code under another name")
			require.Contains(t, values, sel.Sel.Name)
			exported = append(exported, values[sel.Sel.Name])
		}
		return true
	})
	require.Equal(t, Codes(), exported, "error.go's Code constants")

	// doc.go: the list after "The codes, shared by both doors:".
	doc, err := os.ReadFile(filepath.Join(root, "doc.go"))
	require.NoError(t, err)
	_, list, ok := strings.Cut(string(doc), "The codes, shared by both doors:\n//\n")
	require.True(t, ok, "doc.go lists the codes")
	list, _, _ = strings.Cut(list, "\n//\n")
	require.Equal(t, Codes(), firstGroups(`(?m)^//\t([a-z_]+) `, list), "doc.go's list of codes")

	// README: the rows of the table headed "| failure code | meaning |".
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(readme), "| failure code | meaning |\n| --- | --- |\n")
	require.True(t, ok, "README has the failure code table")
	table, _, _ = strings.Cut(table, "\n\n")
	require.Equal(t, Codes(), firstGroups("(?m)^\\| `([a-z_]+)` \\|", table), "README's table of codes")
}

// firstGroups returns the first submatch of every match of pattern in s.
func firstGroups(pattern, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
