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
		{"fixtures imports", map[string]string{
			"fixtures/mmdouble/m.go":         goSource("mmdouble", "boxmaker/fixtures/syncbuf"),
			"fixtures/syncbuf/s.go":          goSource("syncbuf"),
			"roles/inferproxy/scripted.go":   goSource("inferproxy", "boxmaker/roles/internal/llamadouble"),
			"roles/inferproxy/old.go":        goSource("inferproxy", "boxmaker/fixtures/llamadouble"),
			"roles/inferproxy/proxy_test.go": goSource("inferproxy", "boxmaker/fixtures/syncbuf"),
			"roles/loopd/loop.go":            goSource("loopd", "boxmaker/fixtures/syncbuf", "boxmaker/roles"),
			"main.go":                        goSource("main", "boxmaker/fixtures"),
		}, []string{
			"main.go: production code imports boxmaker/fixtures, a test double",
			"roles/inferproxy/old.go: production code imports boxmaker/fixtures/llamadouble, a test double",
			"roles/loopd/loop.go: production code imports boxmaker/fixtures/syncbuf, a test double",
		}},
		{"unsafe and cgo", map[string]string{
			"wire/u.go":      goSource("wire", "unsafe"),
			"roles/c/c.go":   goSource("c", "C"),
			"roles/ok/ok.go": goSource("ok", "os"),
			// The listed file may import unsafe, and nothing else may, not
			// even another *_unsafe.go or a test.
			"roles/toolkit/seccomp_unsafe.go": goSource("toolkit", "unsafe"),
			"roles/toolkit/other_unsafe.go":   goSource("toolkit", "unsafe"),
			"roles/toolkit/seccomp_test.go":   goSource("toolkit", "unsafe"),
			// reflect's way round the ban, and a reflect.Pointer that is a Kind.
			"roles/toolkit/seccomp.go": "package toolkit\nimport \"reflect\"\nvar p = &struct{}{}\n" +
				"var _ = reflect.ValueOf(p).Pointer()\nvar _ = reflect.ValueOf(p).Kind() == reflect.Pointer\n" +
				"var _ = reflect.ValueOf(p).Elem().UnsafeAddr()\n",
		}, []string{
			`roles/c/c.go: imports "C"`,
			`roles/toolkit/other_unsafe.go: imports "unsafe"`,
			"roles/toolkit/seccomp.go:4: calls Pointer(), a raw pointer",
			"roles/toolkit/seccomp.go:6: calls UnsafeAddr(), a raw pointer",
			`roles/toolkit/seccomp_test.go: imports "unsafe"`,
			`wire/u.go: imports "unsafe"`,
		}},
		{"warnings", map[string]string{
			"audit/commit.go": "package audit\n\n// lead commits.\n//\n// WARNING: order matters. TestKnown and\n// TestMissing prove it; so do TestFamily*.\nfunc lead() {}\n\n" +
				"// Not a warning: TestAlsoMissing is named outside one.\nfunc other() {}\n\n/*\nWARNING: TestGone proves it.\n*/\nfunc third() {}\n",
			"audit/commit_test.go": "package audit\nimport \"testing\"\nfunc TestKnown(t *testing.T) {}\nfunc TestFamilyOne(t *testing.T) {}\n" +
				"type s struct{}\nfunc (s) TestMissing(t *testing.T) {}\n",
		}, []string{
			"audit/commit.go:5: a warning names TestMissing, which no test defines",
			"audit/commit.go:13: a warning names TestGone, which no test defines",
		}},
		{"package docs", map[string]string{
			"wire/doc.go":           "// Package wire is documented.\npackage wire\n",
			"wire/frame.go":         "package wire\n",
			"wire/wire_test.go":     "// Package wire's tests may say anything.\npackage wire\n",
			"audit/audit.go":        "// Package audit is documented in its own file.\npackage audit\n",
			"policy/grant.go":       "// Package policy is documented in the wrong file.\npackage policy\n",
			"roles/loopd/loop.go":   "package loopd\n",
			"roles/x/doc.go":        "// Package x is documented.\npackage x\n",
			"roles/x/x.go":          "// Package x is documented twice.\npackage x\n",
			"roles/y/y.go":          "//go:build linux\n\n// Package y is documented after a constraint.\npackage y\n",
			"main.go":               "// Command boxmaker is the binary.\npackage main\n",
			"fixtures/fake/fake.go": "// A comment set apart from the clause is no doc.\n\npackage fake\n",
		}, []string{
			"fixtures/fake: package fake has no package comment (put it in fixtures/fake/doc.go or fixtures/fake/fake.go)",
			"policy/grant.go: the package comment of policy belongs in policy/doc.go or policy/policy.go",
			"roles/loopd: package loopd has no package comment (put it in roles/loopd/doc.go or roles/loopd/loopd.go)",
			"roles/x: package x has 2 package comments, in roles/x/doc.go, roles/x/x.go; keep one",
		}},
		{"role names", map[string]string{
			"roles/table.go": "package roles\nfunc owner(n string) bool { return n == \"bxctl\" }\n",
			"roles/loopd/channel.go": "package loopd\nfunc names(client string) bool { return client == \"gatewayd\" }\n" +
				"func other(client string) bool { return \"loopd\" != client || client == \"nobody\" }\n",
			"roles/internal/units/service.go": "package units\nconst owner = \"bxctl\"\nfunc t(r string) int {\n\tswitch r {\n\tcase \"x\", \"brokerd\":\n\t\treturn 1\n\t}\n\treturn 0\n}\n",
			"roles/internal/units/ok.go":      "package units\nvar _ = lookup(\"brokerd\")\nfunc lookup(string) int { return 0 }\n",
			"roles/loopd/channel_test.go":     "package loopd\nvar _ = \"gatewayd\" == \"gatewayd\"\n",
		}, []string{
			`roles/internal/units/service.go:2: names as a constant the role name "bxctl"; say it in a column of roles/table.go and derive it`,
			`roles/internal/units/service.go:5: switches on the role name "brokerd"; say it in a column of roles/table.go and derive it`,
			`roles/loopd/channel.go:2: compares with the role name "gatewayd"; say it in a column of roles/table.go and derive it`,
			`roles/loopd/channel.go:3: compares with the role name "loopd"; say it in a column of roles/table.go and derive it`,
		}},
		{"call decoded once", map[string]string{
			"roles/brokerd/call.go":               "package brokerd\nimport \"boxmaker/wire\"\nvar _ = wire.DecodeCall(\"shell\", \"{}\")\n",
			"roles/brokerd/runner.go":             "package brokerd\nimport \"boxmaker/wire\"\nvar _, _ = wire.ToolByName(\"shell\")\n",
			"roles/brokerd/internal/handles/h.go": "package handles\nimport \"boxmaker/wire\"\nvar _, _ = wire.DecodeToolArgs(\"shell\", \"{}\")\n",
			"roles/brokerd/call_test.go":          "package brokerd\nimport \"boxmaker/wire\"\nvar _ = wire.DecodeCall(\"shell\", \"{}\")\n",
			"roles/loopd/tools.go":                "package loopd\nimport \"boxmaker/wire\"\nvar _, _ = wire.ToolByName(\"shell\")\n",
		}, []string{
			"roles/brokerd/internal/handles/h.go:3: calls DecodeToolArgs; brokerd decodes a call once, in roles/brokerd/call.go, and later stages take its wire.Call",
			"roles/brokerd/runner.go:3: calls ToolByName; brokerd decodes a call once, in roles/brokerd/call.go, and later stages take its wire.Call",
		}},
		{"skips", map[string]string{
			"roles/loopd/idle_test.go":    "package loopd\nimport \"testing\"\nfunc TestX(t *testing.T) { t.Skipf(\"no %s\", \"fd\") }\n",
			"roles/loopd/ok_test.go":      "package loopd\nimport (\"testing\"; \"boxmaker/fixtures/require\")\nfunc TestY(t *testing.T) { require.Elsewhere(t, \"a helper\") }\n",
			"fixtures/require/require.go": "package require\nimport \"testing\"\nfunc Elsewhere(t testing.TB, why string) { t.Skip(why) }\n",
			"policy/dir_test.go":          "package policy\nimport \"testing\"\nfunc TestZ(t *testing.T) { t.Skip(\"no inotify\") }\n",
			"stack_test.go":               "package main\nimport \"testing\"\nfunc TestS(t *testing.T) { t.SkipNow() }\n",
		}, []string{
			"roles/loopd/idle_test.go:3: skips with Skipf; skip through fixtures/require (Available, Tool, Elsewhere, ...)",
			"stack_test.go:3: skips with SkipNow; skip through fixtures/require (Available, Tool, Elsewhere, ...)",
		}},
		{"homes", map[string]string{
			"roles/brokerd/walk.go":                     goSource("brokerd", "golang.org/x/sys/unix"),
			"roles/brokerd/internal/notes/w.go":         goSource("notes", "golang.org/x/sys/unix", "boxmaker/roles/internal/nofollow"),
			"roles/internal/sandbox/s.go":               goSource("sandbox", "boxmaker/roles/internal/nofollow"),
			"roles/toolkit/files.go":                    goSource("toolkit", "boxmaker/roles/internal/nofollow"),
			"roles/brokerd/walk_test.go":                goSource("brokerd", "golang.org/x/sys/unix"),
			"roles/brokerd/sessions.go":                 goSource("brokerd", "boxmaker/roles/internal/atomicfile"),
			"roles/brokerd/secret.go":                   goSource("brokerd", "boxmaker/roles/internal/units"),
			"roles/brokerd/internal/secrets/read.go":    goSource("secrets", "boxmaker/roles/internal/units"),
			"roles/brokerd/checkpoint.go":               goSource("brokerd", "golang.org/x/mod/sumdb/note"),
			"roles/brokerd/internal/checkpoints/key.go": goSource("checkpoints", "golang.org/x/mod/sumdb/note", "boxmaker/roles/internal/atomicfile"),
			"roles/brokerd/internal/sessions/store.go":  goSource("sessions", "boxmaker/roles/internal/atomicfile"),
		}, []string{
			"roles/brokerd/checkpoint.go: imports golang.org/x/mod/sumdb/note; brokerd's own package signs nothing: the checkpoint key and the witness are roles/brokerd/internal/checkpoints'",
			"roles/brokerd/secret.go: imports boxmaker/roles/internal/units; brokerd's own package looks for no secret's copy itself: roles/brokerd/internal/secrets reads them",
			"roles/brokerd/sessions.go: imports boxmaker/roles/internal/atomicfile; brokerd's own package writes no state of its own: each store is a package under roles/brokerd/internal/ (sessions, handles, jobruns, notes, checkpoints)",
			"roles/brokerd/walk.go: imports golang.org/x/sys/unix; brokerd's own package makes no system calls of its own: the notes' walk is roles/brokerd/internal/notes'",
			"roles/toolkit/files.go: imports boxmaker/roles/internal/nofollow; only the notes' walk, the sandbox's mounts and bxctl's readers of loopd's and brokerd's files open paths beneath a directory a sandbox or a role could plant links in",
		}},
		{"entry points", map[string]string{
			"roles/loopd/loopd.go":           "package loopd\ntype Options struct{}\nfunc Command() {}\nfunc Run() {}\n",
			"roles/egressd/egressd.go":       "package egressd\ntype Options struct{}\nfunc Command() {}\n",
			"roles/witnessd/witnessd.go":     "package witnessd\ntype Options struct{}\nfunc Command() {}\nfunc Main() {}\n",
			"roles/bxctl/bxctl.go":           "package bxctl\nfunc Command() {}\n",
			"roles/toolkit/tools.go":         "package toolkit\nfunc commandOf() {}\n",
			"roles/gatewayd/internal/m/m.go": "package m\nfunc Run() {}\n",
		}, []string{
			"roles/egressd: takes Options but has no func Main",
			"roles/loopd: func Run; a role's entry that takes Options is Main",
			"roles/toolkit: no func Command, the role's entry for main",
		}},
		{"socket paths", map[string]string{
			"roles/loopd/loopd.go": "package loopd\nfunc socketPath() {}\n",
			"roles/bxctl/up.go":    "package bxctl\nfunc f(paths P, p Q) string { return paths.Join(\"run\", p.Dir(), p.Socket) }\n",
			"roles/bxctl/ok.go":    "package bxctl\nfunc g(paths P) string { return paths.Join(\"run\", \"up.json\") }\n",
			"roles/table.go":       "package roles\nfunc (p Pair) Path(home string) string { return filepath.Join(home, \"run\", p.Dir(), p.Socket) }\n",
		}, []string{
			"roles/bxctl/up.go:2: joins a pair's socket path by hand; use sock.PathOf or Pair.Path",
			"roles/loopd/loopd.go:2: func socketPath; use sock.PathOf",
		}},
		{"made only in", map[string]string{
			"roles/brokerd/call.go":                   "package brokerd\nvar _ = policy.HandleValue{Content: \"x\"}\n",
			"roles/brokerd/internal/handles/s.go":     "package handles\nvar _ = policy.HandleValue{}\n",
			"roles/brokerd/call_test.go":              "package brokerd\nvar _ = policy.HandleValue{}\n",
			"roles/brokerd/jobadmin.go":               "package brokerd\nvar _ = wire.JobRun{Outcome: wire.RunRunning}\n",
			"roles/brokerd/jobstart.go":               "package brokerd\nvar _, _ = jobs.JobSession(\"j\", now, true)\n",
			"roles/brokerd/internal/jobruns/r.go":     "package jobruns\nvar _ = wire.JobRun{}\nvar _, _ = jobs.JobSession(\"j\", now, false)\n",
			"roles/brokerd/inspect.go":                "package brokerd\nvar _, _ = policy.RestoreSession(wire.Secret, false)\n",
			"roles/brokerd/brokerd.go":                "package brokerd\nvar _ = audit.CheckpointConfig{Origin: \"o\"}\n",
			"roles/brokerd/internal/sessions/s.go":    "package sessions\nvar _ = policy.NewSession()\nvar _, _ = policy.ParseSession(nil)\n",
			"roles/brokerd/internal/checkpoints/k.go": "package checkpoints\nvar _ = audit.CheckpointConfig{}\n",
		}, []string{
			"roles/brokerd/brokerd.go:2: builds a audit.CheckpointConfig; only roles/brokerd/internal/checkpoints does",
			"roles/brokerd/call.go:2: builds a policy.HandleValue; only roles/brokerd/internal/handles does",
			"roles/brokerd/inspect.go:2: calls policy.RestoreSession; only roles/brokerd/internal/sessions does",
			"roles/brokerd/jobadmin.go:2: builds a wire.JobRun; only roles/brokerd/internal/jobruns does",
			"roles/brokerd/jobstart.go:2: calls jobs.JobSession; only roles/brokerd/internal/jobruns does",
		}},
		{"routes", map[string]string{
			"roles/inspectd/inspectd.go":   "package inspectd\nfunc f(srv *S, q *Q) { srv.Handle = q.handle }\n",
			"roles/egressd/egressd.go":     "package egressd\nfunc f(gate *S, h H) {\n\tgate.HandleFile = h\n}\n",
			"roles/internal/sock/kinds.go": "package sock\nfunc (k Kinds) Route(s *Server) { s.Handle = nil }\n",
			"roles/inspectd/q_test.go":     "package inspectd\nfunc g(srv *S) { srv.Handle = nil }\n",
			"roles/witnessd/witnessd.go":   "package witnessd\nfunc f(w *W, gate *S) error { return w.kinds().Route(gate) }\n",
		}, []string{
			"roles/egressd/egressd.go:3: sets HandleFile; route a table of kinds (sock.Kinds, sock.FileKinds)",
			"roles/inspectd/inspectd.go:2: sets Handle; route a table of kinds (sock.Kinds, sock.FileKinds)",
		}},
		{"peer checks", map[string]string{
			"roles/witnessd/witnessd.go":       "package witnessd\nfunc f(gate *S, allow func()) { gate.AllowPeer = allow }\n",
			"roles/internal/sock/peercheck.go": "package sock\nfunc (s *S) R(allow func()) { s.AllowPeer = allow }\n",
			"roles/witnessd/witnessd_test.go":  "package witnessd\nfunc g(gate *S) { gate.AllowPeer = nil }\n",
		}, []string{
			"roles/witnessd/witnessd.go:2: sets AllowPeer; use ReplacePeerCheck",
		}},
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

// The allowlists cannot go stale or lose their rules: an entry must still
// be needed, an unsafe file must be named *_unsafe.go and say why.
func TestAllowlistsCatchBadEntries(t *testing.T) {
	files, err := projectFiles(writeTree(t, map[string]string{
		"roles/toolkit/seccomp_unsafe.go": goSource("toolkit", "unsafe"),
		"roles/toolkit/raw.go":            goSource("toolkit", "unsafe"),
		"roles/toolkit/quiet_unsafe.go":   goSource("toolkit", "unsafe"),
		"roles/inferproxy/scripted.go":    goSource("inferproxy", "boxmaker/fixtures/llamadouble"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := checkUnsafe(files, map[string]string{
		"roles/toolkit/seccomp_unsafe.go": "a reason",
		"roles/toolkit/raw.go":            "a reason, but not the name",
		"roles/toolkit/quiet_unsafe.go":   "",
		"roles/toolkit/gone_unsafe.go":    "a reason for a file that left",
	})
	got = append(got, checkFixtureImportsAllowing(files, map[string]string{
		"roles/inferproxy imports fixtures/llamadouble": "in use",
		"roles/loopd imports fixtures/llamadouble":      "no longer",
	})...)
	want := []string{
		"roles/toolkit/gone_unsafe.go: allowed unsafe, but there is no such file",
		"roles/toolkit/quiet_unsafe.go: allowed unsafe without a reason",
		"roles/toolkit/raw.go: allowed unsafe, but its name does not end in _unsafe.go",
		`fixtureImports allows "roles/loopd imports fixtures/llamadouble", which no production file does any more: remove it`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
