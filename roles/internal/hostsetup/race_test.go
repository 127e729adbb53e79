package hostsetup

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/units"

	"golang.org/x/sys/unix"
)

// raceRounds is how many homes TestRootSetupRacingBroker prepares while the
// racer runs: half on a first start (memory/ still root's), half on a later
// one (memory/ brokerd's, with links planted in it).
const raceRounds = 400

// TestRacerHelperProcess is not a test: TestRootSetupRacingBroker runs this
// binary again under brokerd's uid with BXCTL_TEST_RACER set, and this is
// the racer, a compromised brokerd. It reads the home of the round from the
// control file and, until it is killed, swaps directories in memory/ for
// links to what lies outside it, and plants symbolic and hard links as
// memory/core.md, as fast as it can.
func TestRacerHelperProcess(t *testing.T) {
	control := os.Getenv("BXCTL_TEST_RACER")
	if control == "" {
		require.Elsewhere(t, "the racer of TestRootSetupRacingBroker, run only by it")
	}
	victims := os.Getenv("BXCTL_TEST_VICTIMS")
	for i := 0; ; i++ {
		data, _ := os.ReadFile(control)
		home := strings.TrimSpace(string(data))
		if home == "" {
			time.Sleep(time.Millisecond)
			continue
		}
		race(filepath.Join(home, "memory"), []string{"../etc", filepath.Join(home, "etc", "grants"), victims, "/nonexistent"},
			[]string{filepath.Join(victims, "open"), filepath.Join(home, "etc", "config.toml")}, i)
	}
}

// race is one burst of the racer's swaps in mem: each of notes/, d/ and
// core.md is exchanged (renameat2 RENAME_EXCHANGE, so the name is never
// missing) with a symbolic link to what lies outside memory/, over and
// over, so that at any moment it is the link about half the time; core.md
// also with a hard link to a file of root's that the racer may write (which
// fs.protected_hardlinks allows). Errors are the point (most fail while
// memory/ is root's) and are ignored.
func race(mem string, dirs, files []string, i int) {
	dir, file := dirs[i%len(dirs)], files[i%len(files)]
	var swaps [][2]string
	for _, sub := range []string{"notes", "d"} {
		path := filepath.Join(mem, sub)
		os.Mkdir(path, 0o700)
		os.WriteFile(filepath.Join(path, "n"), []byte("x"), 0o600)
		os.Remove(path + ".swap")
		os.Symlink(dir, path+".swap")
		swaps = append(swaps, [2]string{path, path + ".swap"})
	}
	core := filepath.Join(mem, "core.md")
	os.Remove(core + ".swap")
	os.Symlink(file, core+".swap")
	os.Remove(core + ".hard")
	os.Link(filepath.Join(filepath.Dir(files[0]), "open"), core+".hard")
	os.Link(filepath.Join(filepath.Dir(files[0]), "open"), filepath.Join(mem, "d", "open"))
	swaps = append(swaps, [2]string{core, core + ".swap"}, [2]string{core, core + ".hard"})
	for range 50 {
		for _, s := range swaps {
			unix.Renameat2(unix.AT_FDCWD, s[0], unix.AT_FDCWD, s[1], unix.RENAME_EXCHANGE)
		}
	}
}

// TestRootSetupRacingBroker runs up's root preparation of the home, many
// times, while a process under brokerd's uid races it through memory/, and
// proves that nothing outside memory/ changes owner or mode, but what the
// plan sets. It skips the refusal of live role processes (which would stop
// at the racer; TestUpRefusesWhileARoleRuns shows it): this is the second
// line, for a process the refusal cannot see coming.
//
// The hard-link variant: where fs.protected_hardlinks is 0, brokerd may link
// any file of root's into memory/. The test, as root, plants such links
// itself in every later-start round, as memory/core.md and in a note
// directory, one of them to a file whose own name it then removes (a
// single link owned by root); the racer links a root file it may write.
func TestRootSetupRacingBroker(t *testing.T) {
	sys := newUIDSystem(t)
	needRoot(t, sys)
	base := publicTemp(t)
	self, _ := os.Executable()
	exe := filepath.Join(base, "hostsetup.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	victims, control := filepath.Join(base, "victims"), filepath.Join(base, "control")
	for _, err := range []error{
		os.WriteFile(exe, data, 0o755),
		os.WriteFile(control, nil, 0o644),
		os.Mkdir(victims, 0o755),
		os.WriteFile(filepath.Join(victims, "open"), []byte("x"), 0o666),
		os.WriteFile(filepath.Join(victims, "closed"), []byte("x"), 0o600),
		os.Mkdir(filepath.Join(victims, "sub"), 0o700),
		os.WriteFile(filepath.Join(victims, "sub", "f"), []byte("x"), 0o600),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(victims, "open"), 0o666)
	first := rootPlan(t, homeAt(t, filepath.Join(base, "probe")))
	creds, err := credentials(first, sys)
	if err != nil {
		t.Fatal(err)
	}
	broker := creds["brokerd"]
	racer := exec.Command(exe, "-test.run=^TestRacerHelperProcess$")
	racer.Env = []string{"BXCTL_TEST_RACER=" + control, "BXCTL_TEST_VICTIMS=" + victims}
	racer.SysProcAttr = &syscall.SysProcAttr{Credential: broker, Pdeathsig: syscall.SIGKILL}
	var racerOut bytes.Buffer
	racer.Stdout, racer.Stderr = &racerOut, &racerOut
	if err := racer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		racer.Process.Kill()
		racer.Wait()
	}()
	outside := owners(t, victims, "")
	var refused, raced int
	for round := range raceRounds {
		home := filepath.Join(base, fmt.Sprintf("home%03d", round))
		paths := homeAt(t, home)
		mem := paths.Join("memory")
		plan := rootPlan(t, paths)
		later := round%2 == 1
		var orphan *os.File
		if later {
			// A later start: memory/ is brokerd's, with what a compromised
			// brokerd could leave there where hard links are not protected.
			orphan = plantLinks(t, mem, victims, round, int(broker.Uid), int(broker.Gid))
		}
		os.Link(filepath.Join(victims, "closed"), filepath.Join(mem, "notes", "closed"))
		if err := os.WriteFile(control+".tmp", []byte(home), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Rename(control+".tmp", control)
		time.Sleep(time.Millisecond)
		var log bytes.Buffer
		err := prepareRootHome(paths, plan, creds, sys, &log)
		if err != nil && !strings.Contains(err.Error(), "refusing") && !strings.Contains(err.Error(), "changed while") {
			t.Fatalf("round %d: %v\n%s", round, err, log.String())
		} else if err != nil {
			refused++
		}
		if got := owners(t, victims, ""); !maps(got, outside) {
			t.Fatalf("round %d: a file outside the home changed:\nbefore %v\nafter  %v", round, outside, got)
		}
		checkHomeOutsideMemory(t, round, home, plan, sys)
		if orphan != nil {
			var st syscall.Stat_t
			syscall.Fstat(int(orphan.Fd()), &st)
			orphan.Close()
			if st.Uid != 0 || st.Mode&0o777 != 0o600 {
				t.Fatalf("round %d: the root file planted as memory/core.md became %d %o", round, st.Uid, st.Mode)
			}
		}
		if fi, err := os.Lstat(filepath.Join(mem, "d")); err == nil && fi.Sys().(*syscall.Stat_t).Uid == broker.Uid {
			raced++
		}
	}
	os.WriteFile(control, nil, 0o644)
	if raced < raceRounds/10 {
		t.Errorf("the racer reached memory/ in only %d of %d rounds; it did not race\n%s", raced, raceRounds, racerOut.String())
	}
	t.Logf("%d rounds, the racer reached memory/ in %d, %d refused (a planted or raced core.md)", raceRounds, raced, refused)
}

// plantLinks makes mem brokerd's, as after a first start, and plants in it
// what brokerd could where fs.protected_hardlinks is 0: memory/core.md a
// hard link to a root file whose own name is then removed (it returns the
// file, to check), and a note that is a hard link to another root file.
func plantLinks(t *testing.T, mem, victims string, round, uid, gid int) *os.File {
	t.Helper()
	for _, p := range []string{mem, filepath.Join(mem, "notes"), filepath.Join(mem, "notes", "welcome.md"), filepath.Join(mem, "core.md")} {
		if err := os.Lchown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	orphan := filepath.Join(victims, "orphan"+strconv.Itoa(round))
	if err := os.WriteFile(orphan, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(orphan)
	if err != nil {
		t.Fatal(err)
	}
	core := filepath.Join(mem, "core.md")
	for _, err := range []error{os.Remove(core), os.Link(orphan, core), os.Remove(orphan)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// checkHomeOutsideMemory: in the home, outside memory/, every directory of
// the plan has the plan's owner and mode, and the test's own files are as
// homeAt made them; nothing else is there.
func checkHomeOutsideMemory(t *testing.T, round int, home string, plan units.Plan, sys uidSystem) {
	t.Helper()
	want := map[string]string{
		filepath.Join(home, "etc", "config.toml"):      "0:0 100644",
		filepath.Join(home, "etc", "grants", "a.toml"): "0:0 100644",
		filepath.Join(home, "etc", "secrets", "s"):     "0:0 100600",
	}
	for _, d := range plan.Dirs {
		uid, _ := sys.lookupUser(d.Owner)
		gid, _ := sys.lookupGroup(d.Group)
		if !d.File {
			want[d.Path] = fmt.Sprintf("%d:%d %o", uid, gid, syscall.S_IFDIR|uint32(d.Mode))
		}
	}
	got := owners(t, home, filepath.Join(home, "memory"))
	for path, w := range want {
		if got[path] != w {
			t.Fatalf("round %d: %s is %q, want %q", round, path, got[path], w)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Fatalf("round %d: %s appeared outside memory/", round, path)
		}
	}
}
