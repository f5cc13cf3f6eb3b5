package analysis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The packages around the engine depend on the model only (docs/library.md,
// "The packages"): a renderer, bucket or score that imported the engine
// would drag it into every program that only prints or scores reports.
// None of them registers anything at init or exports a variable a caller
// could change.
func TestPackageLayout(t *testing.T) {
	const mod = "github.com/faultline-dev/faultline/analysis"
	allowed := map[string][]string{
		"report":         nil,
		"bucket":         {"report"},
		"score":          {"report"},
		"render/textout": {"report", "bucket"},
		"render/jsonout": {"report"},
		"render/htmlout": {"report"},
	}
	for dir, ok := range allowed {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if p == mod || strings.HasPrefix(p, mod+"/") {
					if !slices.Contains(ok, strings.TrimPrefix(p, mod+"/")) {
						t.Errorf("%s imports %s: it may import only %v of analysis/", name, p, ok)
					}
				}
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Name.Name == "init" && d.Recv == nil {
						t.Errorf("%s: func init", name)
					}
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					for _, s := range d.Specs {
						for _, n := range s.(*ast.ValueSpec).Names {
							if n.IsExported() {
								t.Errorf("%s: exported variable %s", name, n.Name)
							}
						}
					}
				}
			}
		}
	}
}
