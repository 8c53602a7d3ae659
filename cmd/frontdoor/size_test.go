package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines bounds a package's non-test Go lines outside cmd (issue
// #32): a package one sentence names stays one a reader can hold.
const maxPackageLines = 3000

// TestPackageSize fails when a package directory outside cmd holds more
// than maxPackageLines lines of non-test Go, so that growth past the bound
// is a decision (split the package) and not an accident.
func TestPackageSize(t *testing.T) {
	sizes := packageLines(t, filepath.Join("..", ".."))
	if len(sizes) < 20 || sizes["session"] == 0 || sizes["stages/internal/admit"] == 0 {
		t.Fatalf("counted %d packages (session %d lines): the walk did not find the module", len(sizes), sizes["session"])
	}
	for dir, n := range sizes {
		if strings.HasPrefix(dir, "cmd/") || dir == "cmd" {
			continue
		}
		if n > maxPackageLines {
			t.Errorf("%s: %d non-test lines, more than %d: split it (docs/ARCHITECTURE.md)", dir, n, maxPackageLines)
		}
	}
}

// packageLines counts the lines of non-test .go files per directory under
// root, by path relative to it.
func packageLines(t *testing.T, root string) map[string]int {
	t.Helper()
	sizes := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		sizes[filepath.ToSlash(rel)] += bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}
