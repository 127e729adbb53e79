package main

// The structure checks of DESIGN.md section 3, run by `make gate` as tests.
// Each check takes a repository root and returns its violations, so that
// structure_violation_test.go can show each one failing on a bad tree.
// deps_test.go (imports and links), warnings_test.go and pkgdocs_test.go
// hold the checks of issue 13 step 5; structureChecks below runs them all.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	modulePath   = "boxmaker"
	maxFileLines = 500
)

// goFile is one project Go file, parsed with its comments.
type goFile struct {
	path    string // slash-separated, relative to the root
	pkgDir  string // its package's directory, relative to the root
	imports []string
	lines   int
	fset    *token.FileSet
	ast     *ast.File
}

// isTest reports whether f is a _test.go file.
func (f goFile) isTest() bool { return strings.HasSuffix(f.path, "_test.go") }

// projectFiles parses every Go file under root, skipping hidden directories,
// testdata and the runtime state.
func projectFiles(root string) ([]goFile, error) {
	var files []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parseGoFile(root, path)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	return files, err
}

func parseGoFile(root, path string) (goFile, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return goFile{}, err
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return goFile{}, err
	}
	rel, _ := filepath.Rel(root, path)
	f := goFile{path: filepath.ToSlash(rel), lines: bytes.Count(src, []byte("\n")), fset: fset, ast: file}
	f.pkgDir = pathDir(f.path)
	for _, imp := range file.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		f.imports = append(f.imports, p)
	}
	return f, nil
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

// projectImport returns the directory a project import names, if it is one.
func projectImport(imp string) (string, bool) {
	if imp == modulePath {
		return ".", true
	}
	return strings.CutPrefix(imp, modulePath+"/")
}

// roleOf names the role package a directory belongs to: roles/<role>/...,
// except roles/internal, which is shared code and no role.
func roleOf(dir string) string {
	parts := strings.Split(dir, "/")
	if len(parts) < 2 || parts[0] != "roles" || parts[1] == "internal" {
		return ""
	}
	return parts[1]
}

// checkRoleImports: no role package imports another role.
func checkRoleImports(files []goFile) []string {
	var bad []string
	for _, f := range files {
		own := roleOf(f.pkgDir)
		for _, imp := range f.imports {
			dir, ok := projectImport(imp)
			if other := roleOf(dir); ok && own != "" && other != "" && other != own {
				bad = append(bad, fmt.Sprintf("%s: role %s imports role %s", f.path, own, other))
			}
		}
	}
	return bad
}

// checkLibraryImports: wire imports nothing of the project; policy and
// audit import only wire.
func checkLibraryImports(files []goFile) []string {
	allowed := map[string][]string{"wire": nil, "policy": {"wire"}, "audit": {"wire"}}
	var bad []string
	for _, f := range files {
		top, _, _ := strings.Cut(f.pkgDir, "/")
		may, restricted := allowed[top]
		if !restricted {
			continue
		}
		for _, imp := range f.imports {
			dir, ok := projectImport(imp)
			if ok && !strings.HasPrefix(dir+"/", top+"/") && !slices.Contains(may, dir) {
				bad = append(bad, fmt.Sprintf("%s: %s may not import %s", f.path, top, imp))
			}
		}
	}
	return bad
}

// checkFileLengths: no Go file over maxFileLines lines.
func checkFileLengths(files []goFile) []string {
	var bad []string
	for _, f := range files {
		if f.lines > maxFileLines {
			bad = append(bad, fmt.Sprintf("%s: %d lines (at most %d)", f.path, f.lines, maxFileLines))
		}
	}
	return bad
}

// unsafeFiles are the only files that may import unsafe or take a raw
// pointer through reflect, each with the reason. Each is named *_unsafe.go,
// so that a listing of the package shows where the pointers are.
var unsafeFiles = map[string]string{
	"roles/toolkit/seccomp_unsafe.go": "seccomp(2) takes the filter program by address, and x/sys/unix has no call that hides the pointer",
}

// rawPointerMethods are reflect.Value's methods that hand out an address as
// a number or an unsafe.Pointer: the way round a ban on importing unsafe.
var rawPointerMethods = []string{"Pointer", "UnsafePointer", "UnsafeAddr", "InterfaceData"}

// checkUnsafe: no cgo anywhere; unsafe, and reflect's raw pointers, only in
// the files allowed lists, each of which exists, is named *_unsafe.go and
// says why. The pointer methods are found by name (a call of one with no
// arguments), without type information: a method of another type with one
// of these names is reported too, and is best renamed.
func checkUnsafe(files []goFile, allowed map[string]string) []string {
	var bad []string
	found := map[string]bool{}
	for _, f := range files {
		_, listed := allowed[f.path]
		found[f.path] = true
		for _, imp := range f.imports {
			if imp == "C" || (imp == "unsafe" && !listed) {
				bad = append(bad, fmt.Sprintf("%s: imports %q", f.path, imp))
			}
		}
		if listed {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 0 {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(rawPointerMethods, sel.Sel.Name) {
				bad = append(bad, fmt.Sprintf("%s:%d: calls %s(), a raw pointer", f.path, f.fset.Position(call.Pos()).Line, sel.Sel.Name))
			}
			return true
		})
	}
	for _, path := range slices.Sorted(maps.Keys(allowed)) {
		switch {
		case !strings.HasSuffix(path, "_unsafe.go"):
			bad = append(bad, fmt.Sprintf("%s: allowed unsafe, but its name does not end in _unsafe.go", path))
		case allowed[path] == "":
			bad = append(bad, fmt.Sprintf("%s: allowed unsafe without a reason", path))
		case !found[path]:
			bad = append(bad, fmt.Sprintf("%s: allowed unsafe, but there is no such file", path))
		}
	}
	return bad
}

// checkDependencies: every module go.mod requires has a row in
// docs/dependencies.md with its exact version, a licence and a reason.
func checkDependencies(root string) []string {
	mods, err := requiredModules(filepath.Join(root, "go.mod"))
	if err != nil {
		return []string{err.Error()}
	}
	rows, err := dependencyRows(filepath.Join(root, "docs", "dependencies.md"))
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	for _, m := range mods {
		row, ok := rows[m.path]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("docs/dependencies.md: no row for %s", m.path))
		case row[1] != m.version:
			bad = append(bad, fmt.Sprintf("docs/dependencies.md: %s is at %s in go.mod, %q in the table", m.path, m.version, row[1]))
		case row[2] == "" || row[3] == "":
			bad = append(bad, fmt.Sprintf("docs/dependencies.md: %s needs a licence and a reason", m.path))
		}
	}
	return bad
}

type module struct{ path, version string }

// requiredModules reads go.mod's require lines, direct and indirect.
func requiredModules(goMod string) ([]module, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return nil, err
	}
	var mods []module
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "require" && fields[1] == "(":
			inBlock = true
		case inBlock && len(fields) == 1 && fields[0] == ")":
			inBlock = false
		case inBlock && len(fields) == 2:
			mods = append(mods, module{fields[0], fields[1]})
		case len(fields) == 3 && fields[0] == "require":
			mods = append(mods, module{fields[1], fields[2]})
		}
	}
	return mods, sc.Err()
}

// dependencyRows maps each module named in the first column of a markdown
// table row (`| module | version | licence | reason |`) to its cells.
func dependencyRows(doc string) (map[string][]string, error) {
	data, err := os.ReadFile(doc)
	if err != nil {
		return nil, err
	}
	rows := map[string][]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 4 {
			continue
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		rows[cells[0]] = cells
	}
	return rows, nil
}

// structureChecks is every check over parsed files, by name.
var structureChecks = map[string]func([]goFile) []string{
	"role imports":      checkRoleImports,
	"library imports":   checkLibraryImports,
	"fixtures imports":  checkFixtureImports,
	"file lengths":      checkFileLengths,
	"unsafe and cgo":    func(files []goFile) []string { return checkUnsafe(files, unsafeFiles) },
	"warnings":          checkWarnings,
	"package docs":      checkPackageDocs,
	"role names":        checkRoleNames,
	"call decoded once": checkCallDecodedOnce,
	"skips":             checkSkips,
	"homes":             checkHomes,
	"entry points":      checkEntryPoints,
	"socket paths":      checkSocketPaths,
	"made only in":      checkMadeOnlyIn,
	"peer checks":       checkPeerChecks,
	"routes":            checkRoutes,
}

func TestStructure(t *testing.T) {
	files, err := projectFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Go files; is the walk broken?", len(files))
	}
	for name, check := range structureChecks {
		t.Run(name, func(t *testing.T) {
			for _, v := range check(files) {
				t.Error(v)
			}
		})
	}
	t.Run("dependencies", func(t *testing.T) {
		for _, v := range checkDependencies(".") {
			t.Error(v)
		}
	})
}
