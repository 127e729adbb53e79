package main

// The homes of brokerd's parts (issue 24): a tool call is decoded once, at
// brokerd's door, and every later stage takes the typed wire.Call.

import (
	"fmt"
	"go/ast"
	"slices"
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
			if ok && slices.Contains(callDecoders, sel.Sel.Name) {
				bad = append(bad, fmt.Sprintf("%s:%d: calls %s; brokerd decodes a call once, in %s, and later stages take its wire.Call",
					f.path, f.fset.Position(call.Pos()).Line, sel.Sel.Name, brokerdDoor))
			}
			return true
		})
	}
	return bad
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
	{imp: "boxmaker/roles/internal/atomicfile", not: "roles/brokerd",
		why: "brokerd's own package writes no state of its own: each store is a package under roles/brokerd/internal/ (sessions, handles, jobruns, notes, checkpoints)"},
	{imp: "boxmaker/roles/internal/units", not: "roles/brokerd",
		why: "brokerd's own package looks for no secret's copy itself: roles/brokerd/internal/secrets reads them"},
	{imp: "golang.org/x/mod/sumdb/note", not: "roles/brokerd",
		why: "brokerd's own package signs nothing: the checkpoint key and the witness are roles/brokerd/internal/checkpoints'"},
	{imp: "boxmaker/roles/internal/nofollow", only: []string{"roles/brokerd/internal/notes", "roles/internal/sandbox", "roles/bxctl"},
		why: "only the notes' walk, the sandbox's mounts and bxctl's readers of loopd's and brokerd's files open paths beneath a directory a sandbox or a role could plant links in"},
}

// checkHomes: production code keeps to homeRules.
func checkHomes(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.isTest() {
			continue
		}
		for _, r := range homeRules {
			if !slices.Contains(f.imports, r.imp) {
				continue
			}
			if f.pkgDir == r.not || r.only != nil && !slices.Contains(r.only, f.pkgDir) {
				bad = append(bad, fmt.Sprintf("%s: imports %s; %s", f.path, r.imp, r.why))
			}
		}
	}
	return bad
}

// checkEntryPoints: every role package has one entry name: Command, the
// command builder main dispatches to, and, for a role that takes Options,
// Main(ctx, Options) error, which tests run; none calls it Run.
func checkEntryPoints(files []goFile) []string {
	funcs := map[string][]string{} // role dir -> its top-level functions
	var dirs []string
	for _, f := range files {
		if f.isTest() || roleOf(f.pkgDir) == "" || f.pkgDir != "roles/"+roleOf(f.pkgDir) {
			continue
		}
		if _, ok := funcs[f.pkgDir]; !ok {
			dirs = append(dirs, f.pkgDir)
		}
		funcs[f.pkgDir] = append(funcs[f.pkgDir], topLevel(f)...)
	}
	var bad []string
	for _, dir := range dirs {
		names := funcs[dir]
		switch {
		case !slices.Contains(names, "Command"):
			bad = append(bad, fmt.Sprintf("%s: no func Command, the role's entry for main", dir))
		case slices.Contains(names, "Run"):
			bad = append(bad, fmt.Sprintf("%s: func Run; a role's entry that takes Options is Main", dir))
		case slices.Contains(names, "type Options") && !slices.Contains(names, "Main"):
			bad = append(bad, fmt.Sprintf("%s: takes Options but has no func Main", dir))
		}
	}
	return bad
}

// topLevel lists f's functions (not methods) by name, and its types as
// "type Name".
func topLevel(f goFile) []string {
	var names []string
	for _, d := range f.ast.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					names = append(names, "type "+ts.Name.Name)
				}
			}
		}
	}
	return names
}

// checkSocketPaths: a pair's socket path is made in one place, Pair.Path
// (sock.PathOf finds it by the pair's roles, with the one error for a pair
// the table lacks): no role defines a socketPath of its own or joins
// "run" with a pair's directory by hand.
func checkSocketPaths(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.isTest() || !strings.HasPrefix(f.pkgDir, "roles/") {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Name.Name == "socketPath" {
					bad = append(bad, fmt.Sprintf("%s:%d: func socketPath; use sock.PathOf", f.path, f.fset.Position(n.Pos()).Line))
				}
			case *ast.CallExpr:
				if joinsPairDir(n) {
					bad = append(bad, fmt.Sprintf("%s:%d: joins a pair's socket path by hand; use sock.PathOf or Pair.Path", f.path, f.fset.Position(n.Pos()).Line))
				}
			}
			return true
		})
	}
	return bad
}

// joinsPairDir reports whether call is X.Join("run", p.Dir(), ...).
func joinsPairDir(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Join" || len(call.Args) < 2 {
		return false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Value != `"run"` {
		return false
	}
	dir, ok := call.Args[1].(*ast.CallExpr)
	if !ok {
		return false
	}
	ds, ok := dir.Fun.(*ast.SelectorExpr)
	return ok && ds.Sel.Name == "Dir"
}

// madeOnlyIn says which package alone builds a value of a type (a
// composite literal) or calls a maker function: the home of the concern it
// belongs to.
var madeOnlyIn = map[string]string{
	// A handle's content reaches a decision only from the store that keeps
	// it for its session.
	"policy.HandleValue": "roles/brokerd/internal/handles",
	// A job's run, and the session that gives a job's grants, are minted
	// only by brokerd's record of runs.
	"wire.JobRun":     "roles/brokerd/internal/jobruns",
	"jobs.JobSession": "roles/brokerd/internal/jobruns",
	// A session's taint and trust are read from disk, and raised, only by
	// the store that keeps them durable before a result is sent.
	"policy.NewSession":     "roles/brokerd/internal/sessions",
	"policy.ParseSession":   "roles/brokerd/internal/sessions",
	"policy.RestoreSession": "roles/brokerd/internal/sessions",
	// The audit log's checkpoints are signed only with the key that the
	// checkpoints package keeps in broker/.
	"audit.CheckpointConfig": "roles/brokerd/internal/checkpoints",
}

// checkMadeOnlyIn: production code outside a type's home builds no value
// of it, and calls no maker outside its home, so that the concern stays in
// its room. Names are matched as written (qualifier.Name), without type
// information.
func checkMadeOnlyIn(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.isTest() {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			var expr ast.Expr
			verb := "builds a"
			switch n := n.(type) {
			case *ast.CompositeLit:
				expr = n.Type
			case *ast.CallExpr:
				expr, verb = n.Fun, "calls"
			default:
				return true
			}
			name := qualified(expr)
			if home, ok := madeOnlyIn[name]; ok && f.pkgDir != home {
				bad = append(bad, fmt.Sprintf("%s:%d: %s %s; only %s does", f.path, f.fset.Position(n.Pos()).Line, verb, name, home))
			}
			return true
		})
	}
	return bad
}

// qualified is e as qualifier.Name, or "" for any other expression.
func qualified(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return x.Name + "." + sel.Sel.Name
}

// checkRoutes: a listener answers through its table of kinds (Kinds or
// FileKinds, whose Route checks it against the role table at start):
// production code outside roles/internal/sock assigns no Handle or
// HandleFile of its own.
func checkRoutes(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.isTest() || f.pkgDir == "roles/internal/sock" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for _, lhs := range as.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Handle" || sel.Sel.Name == "HandleFile") {
					bad = append(bad, fmt.Sprintf("%s:%d: sets %s; route a table of kinds (sock.Kinds, sock.FileKinds)", f.path, f.fset.Position(as.Pos()).Line, sel.Sel.Name))
				}
			}
			return true
		})
	}
	return bad
}

// checkPeerChecks: a gate's peer check comes from the role table, and a
// role replaces it only through ReplacePeerCheck (its tests' one hook):
// production code outside roles/internal/sock assigns no AllowPeer.
func checkPeerChecks(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.isTest() || f.pkgDir == "roles/internal/sock" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for _, lhs := range as.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "AllowPeer" {
					bad = append(bad, fmt.Sprintf("%s:%d: sets AllowPeer; use ReplacePeerCheck", f.path, f.fset.Position(as.Pos()).Line))
				}
			}
			return true
		})
	}
	return bad
}
