package heraldtype

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCodes_SameInDocsAndGuide checks the
// failure codes' one source, Codes and the Code constants of this package,
// against every place that repeats it: the table in their doc comment
// (code.go), the herald package's constants (vocabulary.go, generated from
// code.go, which spells each value so that go doc shows it), its package
// documentation (doc.go) and the producers guide's table. A code added to one and not the others fails here.
func TestCodes_SameInDocsAndGuide(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")

	codes := make([]string, 0, len(Codes()))
	for _, c := range Codes() {
		codes = append(codes, string(c))
	}

	// This package: every Code constant with a string value, in whichever
	// file declares it, and the table in the doc comment of their block.
	values := map[string]string{} // constant name → code
	var declared, commented []string
	for _, f := range parseDir(t, ".") {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			n := len(declared)
			for name, value := range stringConsts(gd) {
				if strings.HasPrefix(name, "Code") {
					values[name] = value
					declared = append(declared, value)
				}
			}
			if len(declared) > n && gd.Doc != nil {
				commented = append(commented, firstGroups(`(?m)^\t([a-z_]+) `, gd.Doc.Text())...)
			}
		}
	}
	require.ElementsMatch(t, codes, declared, "the Code constants of package heraldtype (code.go)")
	commented = slices.DeleteFunc(commented, func(s string) bool { return s == "code" }) // the header
	require.Equal(t, codes, commented, "the table in the Code constants' doc comment (code.go)")

	// vocabulary.go: every exported CodeX, its value spelled out.
	vocabularyGo, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "vocabulary.go"), nil, 0)
	require.NoError(t, err)
	var exported []string
	ast.Inspect(vocabularyGo, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		require.True(t, ok, "vocabulary.go's %s must spell its value, for go doc", vs.Names[0].Name)
		s, err := strconv.Unquote(lit.Value)
		require.NoError(t, err)
		require.Equal(t, values[vs.Names[0].Name], s, "vocabulary.go's %s", vs.Names[0].Name)
		exported = append(exported, s)
		return true
	})
	require.Equal(t, codes, exported, "vocabulary.go's Code constants")

	// doc.go: the list after "The codes, shared by both doors:".
	doc, err := os.ReadFile(filepath.Join(root, "doc.go"))
	require.NoError(t, err)
	_, list, ok := strings.Cut(string(doc), "The codes, shared by both doors:\n//\n")
	require.True(t, ok, "doc.go lists the codes")
	list, _, _ = strings.Cut(list, "\n//\n")
	require.Equal(t, codes, firstGroups(`(?m)^//\t([a-z_]+) `, list), "doc.go's list of codes")

	// The producers guide: the rows of the table headed "| failure code | meaning |".
	readme, err := os.ReadFile(filepath.Join(root, "internal", "guide", "producers.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(readme), "| failure code | meaning |\n| --- | --- |\n")
	require.True(t, ok, "the producers guide has the failure code table")
	table, _, _ = strings.Cut(table, "\n\n")
	require.Equal(t, codes, firstGroups("(?m)^\\| `([a-z_]+)` \\|", table), "the producers guide's table of codes")
}

// parseDir parses the Go files of dir that are not tests, with comments.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	return files
}

// stringConsts returns the constants of gd whose value is a string literal,
// by name.
func stringConsts(gd *ast.GenDecl) map[string]string {
	out := map[string]string{}
	for _, s := range gd.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok || len(vs.Names) != len(vs.Values) {
			continue
		}
		for i, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				out[vs.Names[i].Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return out
}

// firstGroups returns the first submatch of every match of pattern in s.
func firstGroups(pattern, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
