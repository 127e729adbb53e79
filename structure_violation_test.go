package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree makes a small repository under a temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func goSource(pkg string, imports ...string) string {
	src := "package " + pkg + "\n"
	for _, imp := range imports {
		src += "import _ \"" + imp + "\"\n"
	}
	return src
}

// Each check finds the violation planted for it, and nothing in the clean
// files beside it: a check that cannot fail would pass here too.
func TestStructureChecksCatchViolations(t *testing.T) {
	for _, c := range []struct {
		check string
		files map[string]string
		want  []string // exactly what the planted tree breaks, in walk order
	}{
		{"role imports", map[string]string{
			"roles/loopd/loop.go":        goSource("loopd", "boxmaker/roles/brokerd", "boxmaker/wire", "boxmaker/roles"),
			"roles/brokerd/broker.go":    goSource("brokerd", "boxmaker/roles/internal/sock"),
			"roles/internal/sock/s.go":   goSource("sock"),
			"roles/brokerd/sub/x/sub.go": goSource("x", "boxmaker/roles/brokerd"),
		}, []string{"roles/loopd/loop.go: role loopd imports role brokerd"}},
		{"library imports", map[string]string{
			"wire/w.go":        goSource("wire", "boxmaker/policy"),
			"policy/p.go":      goSource("policy", "boxmaker/wire", "boxmaker/policy/internal/x"),
			"audit/a.go":       goSource("audit", "boxmaker/roles"),
			"audit/ok.go":      goSource("audit", "boxmaker/wire", "fmt"),
			"roles/bxctl/b.go": goSource("bxctl", "boxmaker/policy", "boxmaker/audit"),
		}, []string{
			"audit/a.go: audit may not import boxmaker/roles",
			"wire/w.go: wire may not import boxmaker/policy",
		}},
		{"file lengths", map[string]string{
			"wire/long.go":  goSource("wire") + strings.Repeat("// line\n", maxFileLines),
			"wire/short.go": goSource("wire") + strings.Repeat("// line\n", maxFileLines-1),
		}, []string{"wire/long.go: 501 lines (at most 500)"}},
		{"unsafe and cgo", map[string]string{
			"wire/u.go":      goSource("wire", "unsafe"),
			"roles/c/c.go":   goSource("c", "C"),
			"roles/ok/ok.go": goSource("ok", "os"),
		}, []string{`roles/c/c.go: imports "C"`, `wire/u.go: imports "unsafe"`}},
	} {
		t.Run(c.check, func(t *testing.T) {
			files, err := projectFiles(writeTree(t, c.files))
			if err != nil {
				t.Fatal(err)
			}
			got := structureChecks[c.check](files)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestDependencyCheckCatchesViolations(t *testing.T) {
	goMod := "module boxmaker\n\ngo 1.26\n\nrequire (\n\texample.com/a v1.2.3\n\texample.com/b v0.1.0 // indirect\n\texample.com/c v2.0.0\n\texample.com/d v1.0.0\n)\n\nrequire example.com/e v0.0.1\n"
	doc := "| module | version | licence | reason |\n|---|---|---|---|\n" +
		"| `example.com/a` | v1.2.3 | MIT | parses things |\n" +
		"| example.com/b | v0.1.1 | MIT | old version |\n" +
		"| example.com/d | v1.0.0 |  | no licence |\n" +
		"| example.com/e | v0.0.1 | BSD-3-Clause | single-line require |\n"
	root := writeTree(t, map[string]string{"go.mod": goMod, "docs/dependencies.md": doc})
	got := strings.Join(checkDependencies(root), "\n")
	want := strings.Join([]string{
		`docs/dependencies.md: example.com/b is at v0.1.0 in go.mod, "v0.1.1" in the table`,
		"docs/dependencies.md: no row for example.com/c",
		"docs/dependencies.md: example.com/d needs a licence and a reason",
	}, "\n")
	if got != want {
		t.Errorf("violations:\n%s\nwant:\n%s", got, want)
	}
}
