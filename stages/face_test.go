package stages_test

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

// maxFace is the promise the package makes: a server programs against at
// most this many names (the contract, its views, jobs, limits,
// dispositions, constructors). Machinery goes to stages/internal/admit, and
// what only some servers need to its own small package (stages/claim,
// stages/adaptive), not here.
const maxFace = 30

// TestFace: the package's non-test files declare at most maxFace exported
// top-level names (every exported const, var, type and function counts
// once; methods do not).
func TestFace(t *testing.T) {
	names := exportedNames(t, ".")
	t.Logf("%d exported names: %s", len(names), strings.Join(names, " "))
	for _, core := range []string{"Gate", "Job", "Limits", "Disposition", "View", "NewGate"} {
		if !slices.Contains(names, core) { // the parse saw the package
			t.Fatalf("%s is missing from the face %v", core, names)
		}
	}
	if len(names) > maxFace {
		t.Fatalf("stages exports %d names, at most %d allowed: move machinery to stages/internal/admit", len(names), maxFace)
	}
}

// exportedNames lists the exported top-level names of the non-test Go
// files in dir, sorted.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								names = append(names, id.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
