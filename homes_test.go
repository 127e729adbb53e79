package main

// The homes of brokerd's parts (issue 24): a tool call is decoded once, at
// brokerd's door, and every later stage takes the typed wire.Call.

import (
	"fmt"
	"go/ast"
	"strings"
)

// brokerdDoor is the one file of brokerd that turns a tool_request's
// strings into a wire.Call.
const brokerdDoor = "roles/brokerd/call.go"

// callDecoders are the calls that decode a tool call or look its tool up
// by name.
var callDecoders = []string{"DecodeCall", "ToolByName", "DecodeToolArgs", "DecodeArgs"}

// inBrokerd reports whether f is production code of brokerd or of a
// package under it.
func inBrokerd(f goFile) bool {
	return !f.isTest() && (f.pkgDir == "roles/brokerd" || strings.HasPrefix(f.pkgDir, "roles/brokerd/"))
}

// checkCallDecodedOnce: outside brokerdDoor, no brokerd code decodes a
// tool call's arguments or looks a tool up by name; it takes the wire.Call
// (or the Decision's Call and Input) that the door made. Calls are found
// by name, without type information.
func checkCallDecodedOnce(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if !inBrokerd(f) || f.path == brokerdDoor {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if ok && contains(callDecoders, sel.Sel.Name) {
				bad = append(bad, fmt.Sprintf("%s:%d: calls %s; brokerd decodes a call once, in %s, and later stages take its wire.Call",
					f.path, f.fset.Position(call.Pos()).Line, sel.Sel.Name, brokerdDoor))
			}
			return true
		})
	}
	return bad
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// importRule says where an import may stand: never in the package dir
// not (exactly that package), or only in the packages only.
type importRule struct {
	imp  string
	not  string
	only []string
	why  string
}

// homeRules keep each of brokerd's side concerns in its own package under
// roles/brokerd/internal/, so that brokerd's own package stays the server,
// the dispatch and the call path.
var homeRules = []importRule{
	{imp: "golang.org/x/sys/unix", not: "roles/brokerd",
		why: "brokerd's own package makes no system calls of its own: the notes' walk is roles/brokerd/internal/notes'"},
	{imp: "boxmaker/roles/internal/nofollow", only: []string{"roles/brokerd/internal/notes", "roles/internal/sandbox"},
		why: "only the notes' walk and the sandbox's mounts open paths beneath a directory a sandbox could plant links in"},
}

// checkHomes: production code keeps to homeRules.
func checkHomes(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.isTest() {
			continue
		}
		for _, r := range homeRules {
			if !contains(f.imports, r.imp) {
				continue
			}
			if f.pkgDir == r.not || r.only != nil && !contains(r.only, f.pkgDir) {
				bad = append(bad, fmt.Sprintf("%s: imports %s; %s", f.path, r.imp, r.why))
			}
		}
	}
	return bad
}
