package main

// The package-doc rule of STYLE.md: one package comment per package, where
// a reader looks for it.

import (
	"fmt"
	"slices"
	"strings"
)

// checkPackageDocs: every package (its non-test files) has exactly one
// package comment, and it is in doc.go or in the file named for the
// package (brokerd.go in package brokerd, main.go in package main).
func checkPackageDocs(files []goFile) []string {
	type pkg struct{ dir, name string }
	docs := map[pkg][]string{}
	var pkgs []pkg
	for _, f := range files {
		if f.isTest() {
			continue
		}
		p := pkg{f.pkgDir, f.ast.Name.Name}
		if _, ok := docs[p]; !ok {
			pkgs = append(pkgs, p)
			docs[p] = nil
		}
		if f.ast.Doc != nil {
			docs[p] = append(docs[p], f.path)
		}
	}
	var bad []string
	for _, p := range pkgs {
		where := docs[p]
		home := []string{p.dir + "/doc.go", p.dir + "/" + p.name + ".go"}
		if p.dir == "." {
			home = []string{"doc.go", p.name + ".go"}
		}
		switch {
		case len(where) == 0:
			bad = append(bad, fmt.Sprintf("%s: package %s has no package comment (put it in %s)", p.dir, p.name, strings.Join(home, " or ")))
		case len(where) > 1:
			bad = append(bad, fmt.Sprintf("%s: package %s has %d package comments, in %s; keep one", p.dir, p.name, len(where), strings.Join(where, ", ")))
		case !slices.Contains(home, where[0]):
			bad = append(bad, fmt.Sprintf("%s: the package comment of %s belongs in %s", where[0], p.name, strings.Join(home, " or ")))
		}
	}
	return bad
}
