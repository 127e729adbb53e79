package hostsetup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/supervise"
	"boxmaker/roles/internal/units"
)

// uidSystem is a user database in which every role user and group has an id
// of its own from firstTestID up, and root is 0: rootSetup runs for real,
// as root, without the host's accounts.
type uidSystem struct{ ids map[string]int }

const firstTestID = 62000

func newUIDSystem(t *testing.T) uidSystem {
	t.Helper()
	plan, err := units.NewPlan(units.NewSite(units.LayoutUnder("/nonexistent"), "", ""))
	if err != nil {
		t.Fatal(err)
	}
	s := uidSystem{ids: map[string]int{"root": 0}}
	for _, u := range plan.Users {
		s.ids[u.Name] = firstTestID + len(s.ids)
	}
	for _, g := range plan.Groups {
		s.ids[g.Name] = firstTestID + len(s.ids)
	}
	return s
}

func (s uidSystem) lookup(name string) (int, error) {
	if id, ok := s.ids[name]; ok {
		return id, nil
	}
	return 0, errors.New("unknown " + name)
}
func (s uidSystem) lookupUser(name string) (int, error)  { return s.lookup(name) }
func (s uidSystem) lookupGroup(name string) (int, error) { return s.lookup(name) }
func (s uidSystem) inGroup(string, string) (bool, error) { return true, nil }
func (s uidSystem) run(args ...string) error             { return fmt.Errorf("ran %q", args) }
func (s uidSystem) systemdRunning() bool                 { return false }

// uids are every id the system hands out, but root's.
func (s uidSystem) uids() []uint32 {
	var out []uint32
	for _, id := range s.ids {
		if id != 0 {
			out = append(out, uint32(id))
		}
	}
	slices.Sort(out)
	return out
}

// needRoot skips a test that changes owners, and one whose ids are in use.
func needRoot(t *testing.T, sys uidSystem) {
	t.Helper()
	require.Root(t, "setting owners and running a role under its own uid needs root")
	if procs, err := supervise.ProcessesOf(sys.uids()); err != nil || len(procs) > 0 {
		require.Available(t, "free test ids", fmt.Errorf("in use: %v %v", procs, err))
	}
}

// publicTemp is a root-owned directory every uid may enter.
func publicTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hostsetup-root")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// homeAt writes a home as `boxmaker init` as root leaves it: root's files,
// memory/ root's and 0700.
func homeAt(t *testing.T, home string) config.Paths {
	t.Helper()
	for path, mode := range map[string]fs.FileMode{
		"etc/config.toml": 0o644, "etc/grants/a.toml": 0o644, "etc/secrets/s": 0o600,
		"memory/core.md": 0o644, "memory/notes/welcome.md": 0o600,
	} {
		path = filepath.Join(home, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := config.Resolve(home, "")
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func rootPlan(t *testing.T, paths config.Paths) units.Plan {
	t.Helper()
	layout := units.Layout{Bin: "/usr/local/bin", Units: paths.Join("run", "units"), Etc: filepath.Dir(paths.Config), Home: paths.Home}
	plan, err := units.NewPlan(units.NewSite(layout, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// owners maps each path under root, skip but not what it holds, to
// "uid:gid mode" (the mode as stat gives it, in octal).
func owners(t *testing.T, root, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(path, &st) == nil {
			out[path] = fmt.Sprintf("%d:%d %o", st.Uid, st.Gid, st.Mode)
		}
		if path == skip && d != nil && d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// TestUpRefusesWhileARoleRuns: a process of a role's uid (here brokerd's,
// in a session of its own, as a leftover of a compromised brokerd would be)
// stops up before it touches anything, and the message names its pid.
func TestUpRefusesWhileARoleRuns(t *testing.T) {
	sys := newUIDSystem(t)
	needRoot(t, sys)
	home := filepath.Join(publicTemp(t), "home")
	paths := homeAt(t, home)
	before := owners(t, home, "")
	broker := uint32(sys.ids[userOf("brokerd")])
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: broker, Gid: broker}}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Wait()
	defer sleeper.Process.Kill()
	_, err := rootSetup(paths, "", false, &bytes.Buffer{}, sys)
	want := fmt.Sprintf("boxmaker-broker, uid %d: pids %d (sleep)", broker, sleeper.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), "refusing to touch the home") || !strings.Contains(err.Error(), want) {
		t.Fatalf("rootSetup: %v\nwant it to name %q", err, want)
	}
	if after := owners(t, home, ""); !maps(before, after) {
		t.Errorf("the home changed although up refused:\nbefore %v\nafter  %v", before, after)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if _, err := rootSetup(paths, "", false, &bytes.Buffer{}, sys); err != nil {
		t.Fatalf("rootSetup once the process is gone: %v", err)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestHandOverMemoryFirstTimeOnly: the first start gives brokerd what the
// owner put in memory/ as root, except links and multiply linked files;
// once brokerd owns memory/, nothing in it is walked again.
func TestHandOverMemoryFirstTimeOnly(t *testing.T) {
	sys := newUIDSystem(t)
	needRoot(t, sys)
	base := publicTemp(t)
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	paths := homeAt(t, filepath.Join(base, "home"))
	mem := paths.Join("memory")
	for _, err := range []error{
		os.Symlink(victim, filepath.Join(mem, "link")),
		os.Link(victim, filepath.Join(mem, "notes", "hard")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	plan := rootPlan(t, paths)
	creds, err := credentials(plan, sys)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := prepareRootHome(paths, plan, creds, sys, &log); err != nil {
		t.Fatal(err)
	}
	broker, loop := creds["brokerd"], creds["loopd"]
	for path, want := range map[string]string{
		"":                     fmt.Sprintf("%d:%d %o", broker.Uid, loop.Gid, fs.ModeDir|0o710),
		"core.md":              fmt.Sprintf("%d:%d %o", broker.Uid, loop.Gid, 0o640),
		"notes":                fmt.Sprintf("%d:%d %o", broker.Uid, broker.Gid, fs.ModeDir|0o700),
		"notes/welcome.md":     fmt.Sprintf("%d:%d %o", broker.Uid, broker.Gid, 0o600),
		"notes/hard":           "0:0 600",
		"link":                 "0:0 " + strconv.FormatUint(uint64(fs.ModeSymlink|0o777), 8),
		"../etc/grants/a.toml": "0:0 644",
	} {
		fi, err := os.Lstat(filepath.Join(mem, path))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if got := fmt.Sprintf("%d:%d %o", st.Uid, st.Gid, fi.Mode()); got != want {
			t.Errorf("memory/%s: %s, want %s", path, got, want)
		}
	}
	if !strings.Contains(log.String(), "memory/link: left as it is") || !strings.Contains(log.String(), "memory/notes/hard: left as it is (it has 2 links)") {
		t.Errorf("the log does not name what was left:\n%s", log.String())
	}
	// Later starts: a root file in brokerd's memory/ stays root's.
	if err := os.WriteFile(filepath.Join(mem, "notes", "later"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prepareRootHome(paths, plan, creds, sys, &log); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(filepath.Join(mem, "notes", "later")); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("a later start walked brokerd's memory/")
	}
}

// TestRootOnlyPath: a home under a directory a role can write is refused.
func TestRootOnlyPath(t *testing.T) {
	sys := newUIDSystem(t)
	needRoot(t, sys)
	base := publicTemp(t)
	ids := roleIDs{uids: map[uint32]string{62001: "brokerd"}, gids: map[uint32]bool{62001: true}}
	mk := func(path string, uid, gid int, mode fs.FileMode) string {
		path = filepath.Join(base, path)
		if err := os.Mkdir(path, mode); err != nil {
			t.Fatal(err)
		}
		os.Chown(path, uid, gid)
		os.Chmod(path, mode)
		return path
	}
	mk("ok", 0, 0, 0o755)
	mk("ok/home", 1000, 1000, 0o700)
	mk("role", 62001, 62001, 0o755)
	mk("group", 0, 62001, 0o775)
	mk("sticky", 0, 0, 0o777|fs.ModeSticky)
	mk("sticky/home", 0, 0, 0o755)
	os.Symlink(filepath.Join(base, "role"), filepath.Join(base, "ok", "link"))
	for path, want := range map[string]string{
		"ok/home":            "",
		"ok/home/new":        "",
		"sticky/home":        "",
		"sticky/new":         "a role could make it first",
		"role/home":          "belongs to brokerd's user",
		"group/home":         "a role could make it first",
		"ok/link/home":       "belongs to brokerd's user",
		"sticky":             "writable by a role",
		"ok/home/../../role": "belongs to brokerd's user",
	} {
		err := rootOnlyPath(filepath.Join(base, path), ids)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
