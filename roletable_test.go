package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"boxmaker/roles"
)

// The role table (roles/table.go) is the one place that says what a role
// is. These checks keep it so: main.go builds in exactly the table's roles,
// and no code outside the table decides anything by a role's name.

// roleTableFile is the one file that may compare against a role's name.
const roleTableFile = "roles/table.go"

// TestMainRegistersTheTable: main.go registers each role of the table, in
// its order, and nothing else.
func TestMainRegistersTheTable(t *testing.T) {
	var registered, table []string
	for _, r := range program().Roles {
		registered = append(registered, r.Name)
		if r.Command == nil {
			t.Errorf("role %s is registered without a command", r.Name)
		}
	}
	for _, spec := range roles.Table {
		table = append(table, spec.Name)
	}
	if !slices.Equal(registered, table) {
		t.Errorf("main.go registers %q; the role table lists %q", registered, table)
	}
}

// checkRoleNames: outside the role table and tests, no comparison (==, !=,
// a switch case) and no constant has a role's name as a string literal.
// Such code knows a fact of that role the table does not say; the fact
// belongs in a column of roles.Spec or roles.Pair instead.
func checkRoleNames(files []goFile) []string {
	names := map[string]bool{}
	for _, spec := range roles.Table {
		names[spec.Name] = true
	}
	var out []string
	for _, f := range files {
		if f.isTest() || f.path == roleTableFile {
			continue
		}
		report := func(lit ast.Expr, what string) {
			if name, ok := roleNameLit(lit, names); ok {
				out = append(out, fmt.Sprintf("%s:%d: %s the role name %q; say it in a column of %s and derive it",
					f.path, f.fset.Position(lit.Pos()).Line, what, name, roleTableFile))
			}
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					report(n.X, "compares with")
					report(n.Y, "compares with")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					report(e, "switches on")
				}
			case *ast.GenDecl:
				if n.Tok == token.CONST {
					for _, spec := range n.Specs {
						for _, v := range spec.(*ast.ValueSpec).Values {
							report(v, "names as a constant")
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// roleNameLit returns the role name e spells, if it is a string literal of
// one.
func roleNameLit(e ast.Expr, names map[string]bool) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil && names[s]
}
