package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/toolrun"
)

func testLimits() toolrun.Limits {
	return toolrun.Limits{CPUSeconds: 5, MemoryBytes: 256 << 20, OutputBytes: 64 << 10, Processes: 64, FileBytes: 1 << 20}
}

// shellSpec is a valid shell run of executable with the given mounts.
func shellSpec(bwrap, executable string, mounts ...Mount) Spec {
	return Spec{
		Bwrap:       bwrap,
		Executable:  executable,
		Mounts:      mounts,
		System:      true,
		WallTime:    10 * time.Second,
		OutputBytes: 64 << 10,
		Job: toolrun.Job{
			Tool:      "shell",
			Arguments: `{"command":"true"}`,
			Mounts:    JobMounts(mounts),
			Limits:    testLimits(),
			System:    &toolrun.System{ShellPath: "/usr/bin:/bin"},
		},
	}
}

// The job's system paths are mounted read-only at their own place, after
// the host's system directories and before any grant.
func TestSystemPathsAreMountedReadOnly(t *testing.T) {
	grant := t.TempDir()
	s := shellSpec("/usr/bin/bwrap", "/opt/boxmaker", Mount{Host: grant, Path: "/work"})
	s.Job.System.Paths = []string{"/nix/store", "/opt/tools"}
	cmd, cleanup, err := s.command(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	line := strings.Join(cmd.Args, " ")
	want := "--ro-bind /nix/store /nix/store --ro-bind /opt/tools /opt/tools --ro-bind-fd 4 /work"
	if !strings.Contains(line, "--ro-bind /usr /usr") || !strings.Contains(line, want) {
		t.Errorf("args lack %q after /usr:\n%s", want, line)
	}
	s.Job.System.Paths = []string{"/work/tools"}
	if _, _, err := s.command(t.Context()); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("a system path inside a grant: %v", err)
	}
}

func TestArgs(t *testing.T) {
	mounts := []Mount{
		{Host: "/srv/b", Path: "/data/b", Writable: true},
		{Host: "/srv/a", Path: "/data/a"},
	}
	s := shellSpec("/usr/bin/bwrap", "/opt/boxmaker", mounts...)
	args := s.args(sortedMounts(s.Mounts), []string{"--ro-bind", "/usr", "/usr"})
	line := strings.Join(args, " ")
	for _, want := range []string{
		"--unshare-all --unshare-user --uid 65534 --gid 65534 --cap-drop ALL --die-with-parent --new-session",
		"--clearenv --setenv PATH /usr/bin:/bin",
		"--ro-bind /opt/boxmaker /boxmaker --proc /proc --dev /dev --size 268435456 --tmpfs /tmp --ro-bind /usr /usr",
		"--ro-bind-fd 4 /data/a --bind-fd 5 /data/b --remount-ro / --chdir / -- /boxmaker toolkit shell",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("args lack %q:\n%s", want, line)
		}
	}
	if !strings.HasSuffix(line, "-- /boxmaker toolkit shell") {
		t.Errorf("args do not end with the toolkit command:\n%s", line)
	}
}

func TestSortedMountsPutsParentsFirst(t *testing.T) {
	got := sortedMounts([]Mount{{Path: "/m/a/b"}, {Path: "/m/a-b"}, {Path: "/m/a"}, {Path: "/m"}})
	var paths []string
	for _, m := range got {
		paths = append(paths, m.Path)
	}
	if want := []string{"/m", "/m/a", "/m/a/b", "/m/a-b"}; !slices.Equal(paths, want) {
		t.Fatalf("sorted %v, want %v", paths, want)
	}
}

func TestSystemArgsFollowTheHost(t *testing.T) {
	args, err := systemArgs()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	if !strings.HasPrefix(line, "--ro-bind /usr /usr") {
		t.Fatalf("system args %q do not start with /usr", line)
	}
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink("/bin")
		if !strings.Contains(line, "--symlink "+target+" /bin") {
			t.Fatalf("host /bin -> %s, args %q", target, line)
		}
	}
}

func TestValidateRefusesDisagreement(t *testing.T) {
	m := Mount{Host: "/srv/a", Path: "/data/a"}
	cases := []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"relative bwrap", func(s *Spec) { s.Bwrap = "bwrap" }, "absolute"},
		{"no wall time", func(s *Spec) { s.WallTime = 0 }, "positive"},
		{"job mounts differ", func(s *Spec) { s.Job.Mounts[0].Writable = true }, "mounts differ"},
		{"job mounts missing", func(s *Spec) { s.Job.Mounts = nil }, "mounts differ"},
		{"egress file without egress", func(s *Spec) { s.Egress = os.Stdin }, "egress"},
		{"shell without system", func(s *Spec) { s.System = false }, "system"},
		{"job output over the cap", func(s *Spec) { s.OutputBytes = 10 }, "output limit"},
		{"unclean host", func(s *Spec) {
			s.Mounts[0].Host = "/srv/../etc"
		}, "clean"},
		{"invalid job", func(s *Spec) { s.Job.Limits.CPUSeconds = 0 }, "positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := shellSpec("/usr/bin/bwrap", "/opt/boxmaker", m)
			c.change(&s)
			err := s.validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("validate() = %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	base := t.TempDir()
	memory := filepath.Join(base, "memory")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(memory, "notes"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustSymlink(t, outside, filepath.Join(memory, "evil"))
	mustSymlink(t, "/etc", filepath.Join(memory, "etc"))
	mustSymlink(t, "notes", filepath.Join(memory, "alias"))
	mustSymlink(t, memory, filepath.Join(base, "home"))

	good := []struct{ root, path, want string }{
		{memory, filepath.Join(memory, "notes"), filepath.Join(memory, "notes")},
		{memory, filepath.Join(memory, "alias"), filepath.Join(memory, "notes")},
		{filepath.Join(base, "home"), filepath.Join(base, "home", "notes"), filepath.Join(memory, "notes")},
	}
	for _, g := range good {
		if got, err := Resolve(g.root, g.path); err != nil || got != g.want {
			t.Errorf("Resolve(%s, %s) = %q, %v; want %q", g.root, g.path, got, err, g.want)
		}
	}
	for _, bad := range []string{
		filepath.Join(memory, "evil"),
		filepath.Join(memory, "etc"),
		filepath.Join(memory, "etc", "passwd"),
		filepath.Join(memory, "..", "outside"),
		filepath.Join(memory, "missing"),
		"notes",
	} {
		if got, err := Resolve(memory, bad); err == nil {
			t.Errorf("Resolve(memory, %s) = %q, want an error", bad, got)
		}
	}
}

func TestOpenMountsRefusesSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, real, filepath.Join(base, "link"))
	files, err := openMounts([]Mount{{Host: real, Path: "/a"}})
	if err != nil {
		t.Fatalf("a real path: %v", err)
	}
	closeAll(files)
	for _, p := range []string{filepath.Join(base, "link"), filepath.Join(base, "link", ".")} {
		if _, err := openMounts([]Mount{{Host: p, Path: "/a"}}); err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("openMounts(%s) = %v, want a symlink error", p, err)
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
