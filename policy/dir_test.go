package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	autoShell = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"ls\"]\n"
	denyShell = "tool = \"shell\"\nmode = \"deny\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"ls\"]\n"
	askShell  = "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"ls -l\"]\n"
	broken    = "tool = \"shell\"\nmode = \"sometimes\"\nmax_taint = \"private\"\n"
)

// summary is what a load says, as text: every grant's fields and every error.
func summary(grants []Grant, bad []error, err error) string {
	var lines []string
	for _, g := range grants {
		lines = append(lines, fmt.Sprintf("%s %s %s %s %s %v %v", g.ID(), g.Tool(), g.Mode(), g.MaxTaint(), g.ResultClass(), g.Untrusted(), g.Constraints()))
	}
	for _, e := range bad {
		lines = append(lines, "bad: "+e.Error())
	}
	if err != nil {
		lines = append(lines, "error: "+err.Error())
	}
	return strings.Join(lines, "\n")
}

// sameAsLoadDir fails unless d.Load says what LoadDir says now.
func sameAsLoadDir(t *testing.T, d *Dir, what string) {
	t.Helper()
	got := summary(d.Load())
	want := summary(LoadDir(d.path))
	if got != want {
		t.Fatalf("after %s, Dir.Load says\n%s\nbut LoadDir says\n%s", what, got, want)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bothModes runs f with a watching Dir and with one that reads every file.
func bothModes(t *testing.T, f func(t *testing.T, newDir func(string) *Dir)) {
	for _, watching := range []bool{true, false} {
		t.Run(fmt.Sprintf("watching=%v", watching), func(t *testing.T) {
			f(t, func(path string) *Dir {
				d := NewDir(path)
				d.noWatch = !watching
				t.Cleanup(func() { d.Close() })
				return d
			})
		})
	}
}

func TestDirAgreesWithLoadDirOnTheFixtures(t *testing.T) {
	bothModes(t, func(t *testing.T, newDir func(string) *Dir) {
		for _, dir := range []string{validDir, invalidDir, filepath.Join(t.TempDir(), "missing")} {
			d := newDir(dir)
			sameAsLoadDir(t, d, "the first load of "+dir)
			sameAsLoadDir(t, d, "the second load of "+dir)
		}
	})
}

// Every change an owner (or a deployment tool) makes to the grants takes
// effect on the next Load, including one made within the same timestamp
// tick as the last read, which no comparison of times could see.
func TestDirSeesEveryChangeOnTheNextLoad(t *testing.T) {
	bothModes(t, func(t *testing.T, newDir func(string) *Dir) {
		root := t.TempDir()
		dir := filepath.Join(root, "grants")
		os.Mkdir(dir, 0o755)
		p := func(name string) string { return filepath.Join(dir, name) }
		outside := filepath.Join(root, "outside.toml")
		writeFile(t, p("a.toml"), autoShell)
		writeFile(t, p("b.toml"), askShell)
		d := newDir(dir)
		sameAsLoadDir(t, d, "the first load")
		if d.noWatch == (d.Uncached() == nil) {
			t.Fatalf("Uncached() = %v with noWatch %v", d.Uncached(), d.noWatch)
		}
		steps := []struct {
			what   string
			change func()
		}{
			{"an edit in place to the same size, at once", func() { writeFile(t, p("a.toml"), denyShell) }},
			{"a replacement by rename", func() {
				writeFile(t, p(".a.tmp"), autoShell)
				os.Rename(p(".a.tmp"), p("a.toml"))
			}},
			{"a new file", func() { writeFile(t, p("c.toml"), denyShell) }},
			{"a file that breaks", func() { writeFile(t, p("c.toml"), broken) }},
			{"a broken file mended", func() { writeFile(t, p("c.toml"), askShell) }},
			{"a file renamed", func() { os.Rename(p("c.toml"), p("d.toml")) }},
			{"a file removed", func() { os.Remove(p("d.toml")) }},
			{"a file no longer named .toml", func() { os.Rename(p("b.toml"), p("b.toml.off")) }},
			{"a symlink to a file elsewhere", func() {
				writeFile(t, outside, askShell)
				os.Symlink(outside, p("e.toml"))
			}},
			{"the symlink's target edited in place", func() { writeFile(t, outside, denyShell) }},
			{"the symlink dangling", func() { os.Remove(outside) }},
			{"a hard link's other name written", func() {
				os.Remove(p("e.toml"))
				writeFile(t, outside, autoShell)
				os.Link(outside, p("f.toml"))
				sameAsLoadDir(t, d, "a hard link added")
				writeFile(t, outside, denyShell)
			}},
			{"the directory replaced", func() {
				os.Rename(dir, dir+".old")
				os.Mkdir(dir, 0o755)
				writeFile(t, p("z.toml"), denyShell)
			}},
			{"the directory removed", func() { os.RemoveAll(dir) }},
			{"the directory back", func() {
				os.Mkdir(dir, 0o755)
				writeFile(t, p("a.toml"), askShell)
			}},
			{"the path made a symlink to another directory", func() {
				os.Rename(dir, dir+".1")
				os.Symlink(dir+".old", dir)
			}},
			{"the symlink retargeted", func() {
				os.Remove(dir)
				os.Symlink(dir+".1", dir)
			}},
		}
		for _, s := range steps {
			s.change()
			sameAsLoadDir(t, d, s.what)
			sameAsLoadDir(t, d, s.what+", loaded again")
		}
	})
}

// A Load with nothing changed parses nothing and hands back the same
// answer; a change reparses only the file that changed.
func TestDirParsesOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("g%02d.toml", i)), autoShell)
	}
	d := NewDir(dir)
	t.Cleanup(func() { d.Close() })
	parses := 0
	d.parse = func(file string, data []byte) (Grant, error) {
		parses++
		return ParseGrant(file, data)
	}
	first, _, err := d.Load()
	if err != nil || len(first) != 20 || parses != 20 {
		t.Fatalf("first load: %d grants, %d parses, %v", len(first), parses, err)
	}
	if d.Uncached() != nil {
		t.Skipf("no inotify here: %v", d.Uncached())
	}
	if len(d.rereads) != 0 {
		t.Errorf("plain files read on every load: %v", d.rereads)
	}
	again, _, _ := d.Load()
	if parses != 20 || &again[0] != &first[0] {
		t.Errorf("an unchanged directory: %d parses in all, same answer %v", parses, &again[0] == &first[0])
	}
	writeFile(t, filepath.Join(dir, "g07.toml"), denyShell)
	after, _, _ := d.Load()
	if parses != 21 || after[7].Mode() != Deny || first[7].Mode() != Auto {
		t.Errorf("one file edited: %d parses in all, mode %v (the earlier answer now says %v)", parses, after[7].Mode(), first[7].Mode())
	}
}

// endsWatch finds an event that ends the watch among others, and refuses a
// buffer it cannot walk.
func TestEndsWatch(t *testing.T) {
	event := func(mask uint32, name string) []byte {
		b := make([]byte, 16+len(name))
		b[4], b[5], b[6], b[7] = byte(mask), byte(mask>>8), byte(mask>>16), byte(mask>>24)
		b[12] = byte(len(name))
		copy(b[16:], name)
		return b
	}
	const modify, overflow, ignored = 0x2, 0x4000, 0x8000
	for _, c := range []struct {
		buf  []byte
		want bool
	}{
		{event(modify, "a.toml\x00\x00"), false},
		{slices.Concat(event(modify, "a.toml\x00\x00"), event(modify, "")), false},
		{slices.Concat(event(modify, "a.toml\x00\x00"), event(overflow, "")), true},
		{event(ignored, ""), true},
		{event(modify, "a.toml\x00\x00")[:20], true},
		{event(modify, "")[:10], true},
	} {
		if got := endsWatch(c.buf); got != c.want {
			t.Errorf("endsWatch(%x) = %v, want %v", c.buf, got, c.want)
		}
	}
}
