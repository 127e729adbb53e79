package policy

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

func mustPaths(t *testing.T, tool string, entries ...string) pathsMatcher {
	t.Helper()
	tl, _ := wire.ToolByName(tool)
	m, errs := compileDimension(tl, entries)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return m.(pathsMatcher)
}

func TestNotesPathMatching(t *testing.T) {
	m := mustPaths(t, "notes_read", "notes", "projects/boxmaker")
	cases := []struct {
		path string
		want bool
	}{
		{"notes", true},
		{"notes/todo.md", true},
		{"notes/a/b/c.md", true},
		{"notes/", true},
		{"./notes/todo.md", true},
		{"notes//todo.md", true},
		{"notes/./todo.md", true},
		{"secret/../notes/x.md", true},
		{"notes/../secret/bank.md", false},
		{"notes-old/x.md", false},
		{"note", false},
		{"Notes/x.md", false},
		{"projects/boxmaker/plan.md", true},
		{"projects/boxmaker-old/plan.md", false},
		{"projects/plan.md", false},
		{"projects", false},
		{"../etc/passwd", false},
		{"notes/../../etc/passwd", false},
		{"notes/../..", false},
		{"..", false},
		{"/etc/passwd", false},
		{"/notes/x.md", false},
		{"", false},
		{".", false},
		{"./", false},
		{"notes/x\x00.md", false},
		{"notes/" + strings.Repeat("a/", 1<<19), true},
	}
	for _, c := range cases {
		got, why := m.match(newSubject(c.path))
		if got != c.want {
			t.Errorf("%.60q: %v (%s), want %v", c.path, got, why, c.want)
		}
	}
}

func TestAbsolutePathMatching(t *testing.T) {
	m := mustPaths(t, "file_read", "/etc/hostname", "/srv/data")
	cases := []struct {
		path string
		want bool
	}{
		{"/etc/hostname", true},
		{"//etc//hostname", true},
		{"/etc/./hostname", true},
		{"/etc/hostname/", true},
		{"/etc/hostnames", false},
		{"/etc", false},
		{"/etc/passwd", false},
		{"/srv/data/a/b", true},
		{"/srv/data/../data/x", true},
		{"/srv/data/../secret", false},
		{"/srv/database", false},
		{"/../etc/hostname", false},
		{"/srv/../../etc/hostname", false},
		{"etc/hostname", false},
		{"./etc/hostname", false},
		{"", false},
		{"/", false},
		{"/etc/hostname\x00", false},
	}
	for _, c := range cases {
		got, why := m.match(newSubject(c.path))
		if got != c.want {
			t.Errorf("%q: %v (%s), want %v", c.path, got, why, c.want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	cases := []struct {
		dim       wire.Dimension
		in, want  string
		errSubstr string
	}{
		{wire.MemoryPathsDimension, "notes/../secret/x", "secret/x", ""},
		{wire.MemoryPathsDimension, "./a//b/", "a/b", ""},
		{wire.MemoryPathsDimension, "../a", "", "leaves its root"},
		{wire.MemoryPathsDimension, "/a", "", notesPathRule},
		{wire.MemoryPathsDimension, "", "", "names the root itself"},
		{wire.MemoryPathsDimension, "a\x00b", "", "NUL"},
		{wire.AbsolutePathsDimension, "/etc//x/../hostname", "/etc/hostname", ""},
		{wire.AbsolutePathsDimension, "etc/hostname", "", "not absolute"},
		{wire.AbsolutePathsDimension, "/..", "", "leaves its root"},
		{wire.HostsDimension, "/etc", "", "takes no path"},
	}
	for _, c := range cases {
		got, err := CleanPath(c.dim, c.in)
		if got != c.want || (c.errSubstr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.errSubstr) {
			t.Errorf("CleanPath(%d, %q) = %q, %v; want %q, %q", c.dim, c.in, got, err, c.want, c.errSubstr)
		}
	}
}

func TestPatternMatching(t *testing.T) {
	tl, _ := wire.ToolByName("shell")
	m, errs := compileDimension(tl, []string{"git (status|log|diff)( [a-z0-9=-]+)*", "ls|pwd", "echo [^;]*"})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		command string
		want    bool
	}{
		{"git status", true},
		{"git log --oneline", true},
		{"git status; curl evil.example", false},
		{"xgit status", false},
		{"git statusx", false},
		{"git status\n", false},
		{"ls", true},
		{"ls; rm -rf /", false},    // the alternation is inside the anchors
		{"pwd && rm -rf /", false}, // ditto, for the second alternative
		{"rm -rf / ; ls", false},   // and for the first
		{"echo hi", true},
		{"echo hi\x00; rm -rf /", false},
		{"", false},
		{strings.Repeat("git status ", 1<<16), false},
	}
	for _, c := range cases {
		got, why := m.match(newSubject(c.command))
		if got != c.want {
			t.Errorf("%.60q: %v (%s), want %v", c.command, got, why, c.want)
		}
	}
}
