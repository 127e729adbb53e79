package main

// TestPrivilegedFileOperations lists every file operation that `boxmaker up`
// and `boxmaker install` can reach, which both run as root, and holds each
// to the rule of docs/decisions.md (2026-12-01): root touches only what root
// made and no role can write. Each operation is either descriptor-based
// (relative to a descriptor root opened itself, never following a link) or
// on a path no role can change (under directories only root, or the owner,
// may write). The allowlist below names each one with its reason; a new
// call that is not in it fails, and so does an entry no call needs any more.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// privilegedOps names the calls that change files, by package path.
var privilegedOps = map[string]*regexp.Regexp{
	"os": regexp.MustCompile(`^(Chown|Lchown|Chmod|Chtimes|Mkdir|MkdirAll|MkdirTemp|WriteFile|Create|CreateTemp|OpenFile|` +
		`Remove|RemoveAll|Rename|Symlink|Link|Truncate)$`),
	"path/filepath": regexp.MustCompile(`^(Walk|WalkDir)$`),
	"io/fs":         regexp.MustCompile(`^WalkDir$`),
	// Every *at call (openat2, fchownat, fstatat, ...) and the calls that
	// change a file by path or by descriptor.
	"golang.org/x/sys/unix": regexp.MustCompile(`(at|at2)$|^(Open|Creat|Mkdir|Mknod|Chown|Fchown|Lchown|Chmod|Fchmod|Unlink|Rmdir|` +
		`Rename|Link|Symlink|Truncate|Ftruncate)$`),
	"syscall": regexp.MustCompile(`(at|at2)$|^(Open|Creat|Mkdir|Mknod|Chown|Fchown|Lchown|Chmod|Fchmod|Unlink|Rmdir|` +
		`Rename|Link|Symlink|Truncate|Ftruncate)$`),
}

// statCalls end in "at" but only read, and are not *at calls.
var statCalls = regexp.MustCompile(`^(Stat|Fstat|Lstat)$`)

// privilegedMethods are the methods (of *os.File) that change a file
// through a descriptor.
var privilegedMethods = regexp.MustCompile(`^(Chown|Chmod|Truncate)$`)

// privilegedRoots are where root enters: up and install.
var privilegedRoots = []string{"roles/bxctl.up", "roles/bxctl.install"}

// allowedPrivilegedOp is one function's calls of one operation: how many,
// and why each is safe as root.
type allowedPrivilegedOp struct {
	n   int
	why string
}

// The reasons use two phrases: "fd" for a descriptor-based call, "root-only"
// for a path no role can change, with what makes it so.
var allowedPrivilegedOps = map[string]allowedPrivilegedOp{
	// up as root: the home (roles/internal/hostsetup/root.go, rootfs.go).
	"roles/internal/hostsetup/rootfs.go:openBeneath:unix.Openat2":    {1, "fd: openat2 below a directory descriptor with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS and O_NOFOLLOW"},
	"roles/internal/hostsetup/rootfs.go:handOverMemory:unix.Open":    {1, "root-only: the home, which rootOnlyPath checked"},
	"roles/internal/hostsetup/rootfs.go:handover.entry:unix.Fstatat": {1, "fd: reads only, AT_SYMLINK_NOFOLLOW below a descriptor; the owner and kind are checked again on the entry's own descriptor"},
	"roles/internal/hostsetup/rootfs.go:handover.entry:unix.Fchown": {1, "fd: on the entry's own descriptor, after Fstat on it showed memory/'s (non-role) owner, and one link for a file; " +
		"only in a memory/ no role has owned (never walked once brokerd owns it)"},
	"roles/internal/hostsetup/rootfs.go:ensurePlanFiles:unix.Open": {1, "root-only: the home, which rootOnlyPath checked and ensureDirs made root's 0711"},
	"roles/internal/hostsetup/rootfs.go:ensureFileBeneath:unix.Fchown": {1, "fd: a file root just created with O_EXCL, or one Fstat on the same descriptor showed regular, " +
		"single-link and already the plan's owner's"},
	"roles/internal/hostsetup/rootfs.go:ensureFileBeneath:unix.Fchmod": {1, "fd: as the Fchown beside it"},
	"roles/bxctl/up.go:serve:os.Remove":                                {1, "root-only: run/up.json in run/, root's 0711"},
	"roles/internal/hostsetup/lock.go:lockHome:unix.Open":              {1, "reads only: opens the home as a directory, to resolve run/up.lock below it by descriptor"},
	"roles/internal/hostsetup/lock.go:lockHome:unix.Mkdirat":           {1, "fd: run/ in the home's descriptor, only when missing (EEXIST is kept as it is); rootSetup then gives it the plan's owner and mode"},
	"roles/internal/hostsetup/lock.go:writePid:unix.Ftruncate":         {1, "fd: run/up.lock, opened by openBeneath (no link followed), after Fstat on it showed a regular single-link file of root's"},
	"roles/internal/hostsetup/lock.go:openLog:os.OpenFile": {1, "root-only: FILE of --log, the owner's choice as a shell's 2>FILE was (make run: up.log in the home, root's 0711); " +
		"O_NOFOLLOW|O_NONBLOCK, no O_TRUNC"},
	"roles/internal/hostsetup/lock.go:openLog:.Truncate": {1, "fd: the log just opened, after Fstat on it showed a regular file of one link"},
	"roles/bxctl/up.go:prepareHome:os.MkdirAll":          {1, "not root: only when up runs as the owner (as root, rootSetup makes the home from the plan)"},
	// atomicfile.Write as root: run/up.json (in run/, root's 0711) and install's binary and units (in root's bin and units directories).
	"roles/internal/atomicfile/atomicfile.go:Replace:os.CreateTemp": {1, "root-only: beside run/up.json, the binary or a unit, in directories only root writes; O_EXCL"},
	"roles/internal/atomicfile/atomicfile.go:Replace:.Chmod":        {1, "fd: the temporary file root just made"},
	"roles/internal/atomicfile/atomicfile.go:Replace:os.Remove":     {1, "root-only: the temporary file root made there"},
	"roles/internal/atomicfile/atomicfile.go:Replace:os.Rename":     {1, "root-only: within that same root-only directory"},

	// up as root, when the role users cannot reach the binary or the home:
	// the mount view (roles/internal/mountview), built on a thread of up in
	// a mount namespace of its own, made private before anything is mounted.
	"roles/internal/mountview/view.go:enter:unix.Open": {1, "reads only: an O_PATH descriptor of a bind source (the binary up runs, and the home " +
		"and config directory rootOnlyPath checked)"},
	"roles/internal/mountview/view.go:bindAt:unix.Mkdir": {2, "root-only: in the tmpfs this thread just mounted in its own namespace, which no " +
		"process sees before the view is built"},
	"roles/internal/mountview/view.go:bindAt:os.WriteFile": {1, "root-only: an empty mount point for the binary, in that tmpfs"},

	// up as root: the roles' copies of their secrets (roles/internal/hostsetup/secrets.go),
	// all in run/credentials, which only root writes.
	"roles/internal/hostsetup/secrets.go:stageSecrets:os.Mkdir":  {1, "root-only: run/credentials in run/, root's 0711; then made root's 0711 through an O_NOFOLLOW descriptor"},
	"roles/internal/hostsetup/secrets.go:stageRole:os.RemoveAll": {1, "root-only: run/credentials/<role>, root's (group the role's, 0750): no role writes in it; RemoveAll never follows a link"},
	"roles/internal/hostsetup/secrets.go:stageRole:os.Mkdir":     {1, "root-only: in run/credentials"},
	"roles/internal/hostsetup/secrets.go:copySecret:os.OpenFile": {1, "root-only: O_CREAT|O_EXCL|O_NOFOLLOW in the directory root just made"},
	"roles/internal/hostsetup/secrets.go:copySecret:.Chown":      {1, "fd: the file root just created"},
	"roles/internal/hostsetup/secrets.go:copySecret:.Chmod":      {1, "fd: the file root just created"},
	"roles/internal/hostsetup/secrets.go:copySecret:os.Remove":   {1, "root-only: the file root just created, in the directory root just made"},
	"roles/internal/config/secret.go:ReadSecretFile:os.OpenFile": {1, "reads only: O_RDONLY|O_NOFOLLOW|O_NONBLOCK in secrets/, root's (group brokerd's, 2750)"},

	// Shared by up and install: the plan's directories (roles/internal/hostsetup/install.go).
	"roles/internal/hostsetup/install.go:create:os.MkdirAll": {1, "root-only: the parent of each plan directory; the plan lists parents first and up checks the home " +
		"and etc/ with rootOnlyPath; install's are the production paths or its --prefix"},
	"roles/internal/hostsetup/install.go:create:os.OpenFile": {1, "fd: memory/core.md, O_CREAT|O_EXCL|O_NOFOLLOW: creates a new file or nothing (up makes core.md itself, " +
		"by ensurePlanFiles: see the open note on install)"},
	"roles/internal/hostsetup/install.go:create:os.Mkdir": {1, "root-only: each plan directory, in a parent that is root's (the home, run/, etc/)"},
	"roles/internal/hostsetup/install.go:setOwnerAndMode:os.OpenFile": {1, "fd: O_NOFOLLOW of a plan directory whose parent is root's; " +
		"for memory/core.md (install only) a single-link regular file is required"},
	"roles/internal/hostsetup/install.go:setOwnerAndMode:.Chown": {1, "fd: the descriptor just opened and checked"},
	"roles/internal/hostsetup/install.go:setOwnerAndMode:.Chmod": {1, "fd: the descriptor just opened and checked"},

	// install only: the binary, its links and the units, in root's directories.
	"roles/internal/hostsetup/install.go:ensureBinary:os.MkdirAll": {1, "root-only: the bin directory (/usr/local/bin or under --prefix)"},
	"roles/internal/hostsetup/install.go:ensureLinks:os.Remove":    {1, "root-only: in the bin directory"},
	"roles/internal/hostsetup/install.go:ensureLinks:os.Symlink":   {1, "root-only: in the bin directory"},
	"roles/internal/hostsetup/install.go:ensureLinks:os.Rename":    {1, "root-only: in the bin directory"},
	"roles/internal/hostsetup/install.go:ensureUnits:os.MkdirAll":  {1, "root-only: the units directory (/etc/systemd/system or under --prefix)"},
	"roles/internal/hostsetup/install.go:ensureUnits:os.Remove":    {1, "root-only: a stale unit in the units directory"},
}

// goFunc is one function or method of the project, by package directory.
type goFunc struct {
	pkg, file, name string // name: F, or Recv.M for a method
	decl            *ast.FuncDecl
	imports         map[string]string // name in the file: import path
}

func TestPrivilegedFileOperations(t *testing.T) {
	fset := token.NewFileSet()
	funcs, err := parseFuncs(fset, ".")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{} // key: positions
	for _, f := range reachable(funcs, privilegedRoots) {
		ast.Inspect(f.decl, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if op := privilegedOp(f, call); op != "" {
				key := f.file + ":" + f.name + ":" + op
				found[key] = append(found[key], fmt.Sprintf("%s:%d", f.file, fset.Position(call.Pos()).Line))
			}
			return true
		})
	}
	if len(found) < 10 {
		t.Fatalf("found only %d privileged calls; is the parsing broken?", len(found))
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range found {
			if !yield(k) {
				return
			}
		}
	})
	for _, key := range keys {
		allowed, ok := allowedPrivilegedOps[key]
		switch {
		case !ok:
			t.Errorf("%s: %d call(s) as root not in the allowlist of privops_test.go; make it descriptor-based or show its path is root's alone, "+
				"and add:\n\t%q: {%d, \"fd: ... | root-only: ...\"},", key, len(found[key]), key, len(found[key]))
		case allowed.n != len(found[key]):
			t.Errorf("%s: %d call(s), the allowlist says %d: check the new one and update the count", key, len(found[key]), allowed.n)
		case allowed.why == "":
			t.Errorf("%s: the allowlist gives no reason", key)
		}
	}
	for key := range allowedPrivilegedOps {
		if _, ok := found[key]; !ok {
			t.Errorf("%s: in the allowlist, but up and install no longer reach such a call; remove the entry", key)
		}
	}
}

// privilegedOp names the call if it changes files: "os.Chown", ".Chmod"
// for a method, "" for anything else.
func privilegedOp(f goFunc, call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); ok {
		if path, ok := f.imports[x.Name]; ok {
			if re := privilegedOps[path]; re != nil && re.MatchString(sel.Sel.Name) && !statCalls.MatchString(sel.Sel.Name) {
				return x.Name + "." + sel.Sel.Name
			}
			return ""
		}
	}
	if privilegedMethods.MatchString(sel.Sel.Name) {
		return "." + sel.Sel.Name
	}
	return ""
}

// parseFuncs reads every function of the project's non-test Go files under
// root, by package directory (relative to root) and name.
func parseFuncs(fset *token.FileSet, root string) (map[string][]goFunc, error) {
	out := map[string][]goFunc{} // pkg.name: the functions (methods of one name may be many)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		imports := map[string]string{}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			n := p[strings.LastIndexByte(p, '/')+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			imports[n] = p
		}
		for _, decl := range file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			fn := goFunc{pkg: pathDir(rel), file: rel, name: fd.Name.Name, decl: fd, imports: imports}
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				fn.name = recvName(fd.Recv.List[0].Type) + "." + fd.Name.Name
			}
			out[fn.pkg+"."+fd.Name.Name] = append(out[fn.pkg+"."+fd.Name.Name], fn)
		}
		return nil
	})
	return out, err
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// reachable is every function that roots can reach: a name used in a body
// reaches the functions and methods of that name in its package, and a
// selector on an imported project package reaches that package's. Methods
// called on values reach every method of that name in the package and the
// project packages the file imports: more than the program calls, never
// less (calls through interfaces and function values included).
func reachable(funcs map[string][]goFunc, roots []string) []goFunc {
	seen := map[*ast.FuncDecl]bool{}
	var out []goFunc
	var todo []goFunc
	for _, r := range roots {
		todo = append(todo, funcs[r]...)
	}
	for len(todo) > 0 {
		f := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[f.decl] {
			continue
		}
		seen[f.decl] = true
		out = append(out, f)
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && f.imports[x.Name] != "" {
					if dir, ok := projectImport(f.imports[x.Name]); ok {
						todo = append(todo, funcs[dir+"."+n.Sel.Name]...)
					}
					return false // a package's function: no method of ours
				}
				todo = append(todo, funcs[f.pkg+"."+n.Sel.Name]...)
				for _, p := range f.imports {
					if dir, ok := projectImport(p); ok {
						todo = append(todo, funcs[dir+"."+n.Sel.Name]...)
					}
				}
			case *ast.Ident:
				todo = append(todo, funcs[f.pkg+"."+n.Name]...)
			}
			return true
		})
	}
	return out
}

// TestPrivilegedOpsSeesACall: the scan finds a privileged call where one
// is, so that an empty result above cannot pass for a clean one.
func TestPrivilegedOpsSeesACall(t *testing.T) {
	src := "package p\nimport (\"os\"; \"golang.org/x/sys/unix\")\nfunc up() { helper() }\nfunc helper() { os.Lchown(\"x\", 1, 1); unix.Fchownat(0, \"x\", 1, 1, 0); f.Chmod(0) }\nfunc other() { os.Remove(\"y\") }\n"
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "roles", "bxctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roles", "bxctl", "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	funcs, err := parseFuncs(token.NewFileSet(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range reachable(funcs, privilegedRoots) {
		ast.Inspect(f.decl, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if op := privilegedOp(f, call); op != "" {
					got = append(got, f.name+":"+op)
				}
			}
			return true
		})
	}
	slices.Sort(got)
	if want := []string{"helper:.Chmod", "helper:os.Lchown", "helper:unix.Fchownat"}; !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
}
