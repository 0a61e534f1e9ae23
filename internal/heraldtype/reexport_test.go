package heraldtype

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReexport_CoversEveryType checks that users can name all of this
// package through the herald package alone: the root declares each
// exported type here as an alias of it (type Intent = heraldtype.Intent).
// Its constants are vocabulary.go's, which
// TestVocabulary_RootIsGenerated checks.
func TestReexport_CoversEveryType(t *testing.T) {
	t.Parallel()

	types := exportedTypes(parseDir(t, "."))
	rootTypes := exportedTypes(parseDir(t, filepath.Join("..", "..")))
	for name := range types {
		require.Equal(t, "heraldtype."+name, rootTypes[name], "the root package declares type %s = heraldtype.%s", name, name)
	}
}

// exportedTypes returns the exported types of files, each with the
// package-qualified name it aliases ("" if it is not an alias of another
// package's type).
func exportedTypes(files []*ast.File) map[string]string {
	types := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				s := spec.(*ast.TypeSpec)
				if !s.Name.IsExported() {
					continue
				}
				types[s.Name.Name] = ""
				if sel, ok := s.Type.(*ast.SelectorExpr); ok && s.Assign.IsValid() {
					if pkg, ok := sel.X.(*ast.Ident); ok {
						types[s.Name.Name] = pkg.Name + "." + sel.Sel.Name
					}
				}
			}
		}
	}
	return types
}
