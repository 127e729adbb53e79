package main

// The dependency rules: what a package must never link, and which
// production packages may import a test double under fixtures/.

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// linkRule is a package that must never link any of never, directly or
// through any package it imports, and why.
type linkRule struct {
	pkg   string
	never []string
	why   string
}

var linkRules = []linkRule{
	{"boxmaker/roles/brokerd", []string{"net/http", "crypto/tls"},
		"brokerd needs no network and parses no web bytes (DESIGN.md sections 1 and 6); egressd fetches for it"},
	{"boxmaker/roles/toolkit", []string{"boxmaker/policy", "boxmaker/audit"},
		"toolkit runs in the sandbox, steered by hostile input; the code that decides and audits stays out of it"},
}

// fixtureImports are the production (non-test) packages that may import a
// package under fixtures/, each pair ("roles/x imports fixtures/y") with the
// reason. There are none: code that production runs belongs under
// roles/internal (the scripted model moved there, issue 13 step 5), and an
// entry here is a debt to be named and paid.
var fixtureImports = map[string]string{}

// checkFixtureImports: no production file outside fixtures/ imports a
// package under fixtures/, except the pairs fixtureImports lists, and each
// listed pair is still needed. It reads every file whatever its build
// constraints, which go list would not.
func checkFixtureImports(files []goFile) []string {
	return checkFixtureImportsAllowing(files, fixtureImports)
}

func checkFixtureImportsAllowing(files []goFile, allowed map[string]string) []string {
	var bad []string
	used := map[string]bool{}
	for _, f := range files {
		if f.isTest() || underDir(f.pkgDir, "fixtures") {
			continue
		}
		for _, imp := range f.imports {
			dir, ok := projectImport(imp)
			if !ok || !underDir(dir, "fixtures") {
				continue
			}
			pair := f.pkgDir + " imports " + dir
			if _, ok := allowed[pair]; ok {
				used[pair] = true
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: production code imports %s, a test double", f.path, imp))
		}
	}
	for _, pair := range slices.Sorted(maps.Keys(allowed)) {
		if !used[pair] {
			bad = append(bad, fmt.Sprintf("fixtureImports allows %q, which no production file does any more: remove it", pair))
		}
	}
	return bad
}

// underDir reports whether the slash-separated dir is top or inside it.
func underDir(dir, top string) bool { return dir == top || strings.HasPrefix(dir, top+"/") }

// checkLinks: no rule's package reaches one of its never packages in
// graph (each package's imports); a violation names the chain of imports
// that pulls it in.
func checkLinks(graph map[string][]string, rules []linkRule) []string {
	var bad []string
	for _, r := range rules {
		if _, ok := graph[r.pkg]; !ok {
			bad = append(bad, fmt.Sprintf("%s: go list did not list it", r.pkg))
			continue
		}
		via := importedVia(graph, r.pkg)
		for _, never := range r.never {
			if _, ok := via[never]; !ok {
				continue
			}
			chain := []string{never}
			for p := via[never]; p != ""; p = via[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			bad = append(bad, fmt.Sprintf("%s links %s (%s): %s", r.pkg, never, r.why, strings.Join(chain, " -> ")))
		}
	}
	return bad
}

// importedVia walks graph from root and maps each package reached to the
// package that first imported it ("" for root).
func importedVia(graph map[string][]string, root string) map[string]string {
	via := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range graph[p] {
			if _, seen := via[imp]; !seen {
				via[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return via
}

// importGraph lists pkgs and everything they depend on with go list, as
// `make build` compiles them (no cgo), and returns each package's imports.
func importGraph(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, pkgs...)
	cmd := exec.Command(goTool, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			graph[fields[0]] = fields[1:]
		}
	}
	return graph
}

func TestLinkRules(t *testing.T) {
	var pkgs []string
	for _, r := range linkRules {
		pkgs = append(pkgs, r.pkg)
	}
	for _, v := range checkLinks(importGraph(t, pkgs...), linkRules) {
		t.Error(v)
	}
}

// The link check finds a banned package however deep, names the chain,
// and passes a package that stays clear.
func TestLinkCheckCatchesViolations(t *testing.T) {
	graph := map[string][]string{
		"boxmaker/roles/brokerd":      {"boxmaker/wire", "boxmaker/roles/internal/x"},
		"boxmaker/roles/internal/x":   {"net/url", "net/http"},
		"net/http":                    {"crypto/tls", "net/url"},
		"boxmaker/roles/toolkit":      {"boxmaker/wire", "boxmaker/roles/internal/run"},
		"boxmaker/roles/internal/run": {"boxmaker/wire"},
	}
	rules := []linkRule{
		{"boxmaker/roles/brokerd", []string{"net/http", "crypto/tls"}, "no network"},
		{"boxmaker/roles/toolkit", []string{"boxmaker/policy"}, "no policy"},
		{"boxmaker/roles/gone", []string{"net/http"}, "moved"},
	}
	got := strings.Join(checkLinks(graph, rules), "\n")
	want := strings.Join([]string{
		"boxmaker/roles/brokerd links net/http (no network): boxmaker/roles/brokerd -> boxmaker/roles/internal/x -> net/http",
		"boxmaker/roles/brokerd links crypto/tls (no network): boxmaker/roles/brokerd -> boxmaker/roles/internal/x -> net/http -> crypto/tls",
		"boxmaker/roles/gone: go list did not list it",
	}, "\n")
	if got != want {
		t.Errorf("violations:\n%s\nwant:\n%s", got, want)
	}
}
