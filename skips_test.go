package main

import (
	"fmt"
	"go/ast"
	"slices"
	"strings"
)

// skipMethods are testing.TB's ways to skip.
var skipMethods = []string{"Skip", "Skipf", "SkipNow"}

// checkSkips: a test skips only through fixtures/require (Root, Bwrap,
// Tool, Available, or Elsewhere for a reason that is no lack), so that
// BOXMAKER_REQUIRE can turn a skip for want of something into a failure.
// wire, policy and audit are exempt: their tests import only wire, as
// their code does. Calls are found by name, without type information.
func checkSkips(files []goFile) []string {
	var bad []string
	for _, f := range files {
		top, _, _ := strings.Cut(f.pkgDir, "/")
		if !f.isTest() || f.pkgDir == "fixtures/require" || top == "wire" || top == "policy" || top == "audit" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(skipMethods, sel.Sel.Name) {
				bad = append(bad, fmt.Sprintf("%s:%d: skips with %s; skip through fixtures/require (Available, Tool, Elsewhere, ...)",
					f.path, f.fset.Position(call.Pos()).Line, sel.Sel.Name))
			}
			return true
		})
	}
	return bad
}
