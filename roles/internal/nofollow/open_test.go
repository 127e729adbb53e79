package nofollow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"boxmaker/fixtures/require"
)

// tree makes the directory the cases open names in, with a link of every
// kind a sandbox could plant: inside, outside, to a directory, dangling.
func tree(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"dir/sub", "../outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"file", "dir/file", "dir/sub/deep", "../outside/secret"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		"link-in": "dir/file", "link-out": "../outside/secret", "link-abs": "/etc/passwd",
		"dirlink": "dir", "dir/up": "..", "dangling": "nowhere",
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// names are what the cases open below the tree; "@" is the tree's own
// absolute path, for the cases without RESOLVE_BENEATH.
var names = []string{
	"file", "dir/file", "dir/sub/deep", "./file", "dir//file", "dir/./sub/deep", ".", "dir", "dir/", "dir/sub/",
	"link-in", "link-out", "link-abs", "dirlink", "dirlink/", "dirlink/file", "dir/up/file", "dir/up", "dangling",
	"missing", "dir/missing/x", "file/x", "file/", "file/.", "dir/.", "dirlink/.", "",
	"../outside/secret", "dir/../file", "/etc/passwd", "@/file", "@/dirlink/file", "/proc/self/root@/file", "/proc/self/cwd/file",
}

// stricter reports whether the walk may refuse name (EXDEV) where openat2
// does not: a ".." that stays beneath, or any ".." without RESOLVE_BENEATH.
func stricter(name string) bool { return slices.Contains(strings.Split(name, "/"), "..") }

var flagSets = []struct {
	name  string
	flags uint64
}{
	{"O_RDONLY", unix.O_RDONLY},
	{"O_PATH", unix.O_PATH},
	{"O_PATH|O_NOFOLLOW", unix.O_PATH | unix.O_NOFOLLOW},
	{"O_DIRECTORY", unix.O_RDONLY | unix.O_DIRECTORY},
	{"O_CREAT|O_WRONLY", unix.O_CREAT | unix.O_WRONLY},
	{"O_CREAT|O_EXCL|O_WRONLY", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY},
	{"O_RDONLY with a mode", unix.O_RDONLY}, // openat2: EINVAL
}

var resolves = []struct {
	name    string
	resolve uint64
}{
	{"BENEATH|NO_SYMLINKS", unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS},
	{"NO_SYMLINKS", unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS},
}

// outcome is what one open did: the tree-relative path of what it opened,
// or its error.
func outcome(root string, fd int, err error) string {
	if err != nil {
		return "error " + unix.ErrnoName(errnoOf(err))
	}
	defer unix.Close(fd)
	at, lerr := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if lerr != nil {
		return "opened ?"
	}
	if rel, ok := strings.CutPrefix(at, root); ok {
		return "opened ." + rel
	}
	return "opened outside the tree: " + at
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// TestWalkAgreesWithOpenat2 opens every name with every flag set both ways,
// each in a tree of its own (O_CREAT changes the tree), and holds the walk
// to what the kernel's openat2 did: the same file or the same error, or,
// for a ".." that stays beneath, a refusal.
func TestWalkAgreesWithOpenat2(t *testing.T) {
	if _, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH}); errors.Is(err, unix.ENOSYS) {
		require.Available(t, "openat2", errors.New("this kernel has none to compare with"))
	}
	for _, r := range resolves {
		for _, fs := range flagSets {
			for _, name := range names {
				t.Run(r.name+"/"+fs.name+"/"+name, func(t *testing.T) {
					how := unix.OpenHow{Flags: fs.flags | unix.O_CLOEXEC, Resolve: r.resolve}
					if fs.flags&unix.O_CREAT != 0 || strings.HasSuffix(fs.name, "with a mode") {
						how.Mode = 0o600
					}
					kernelRoot, walkRoot := tree(t), tree(t)
					kernel := openIn(t, kernelRoot, name, &how, unix.Openat2)
					walked := openIn(t, walkRoot, name, &how, walk)
					if strings.Contains(walked, "outside the tree") && !strings.Contains(kernel, "outside the tree") {
						t.Fatalf("walk escaped: %s (openat2: %s)", walked, kernel)
					}
					if walked != kernel && !(stricter(name) && walked == "error EXDEV") {
						t.Errorf("walk: %s; openat2: %s", walked, kernel)
					}
				})
			}
		}
	}
}

// openIn opens name with open from a descriptor of root, "@" standing for
// root's absolute path, and says what it opened.
func openIn(t *testing.T, root, name string, how *unix.OpenHow, open func(int, string, *unix.OpenHow) (int, error)) string {
	t.Helper()
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(dir) })
	fd, err := open(dir, strings.ReplaceAll(name, "@", root), how)
	return outcome(root, fd, err)
}

// TestOpenFallsBackOnENOSYS: where openat2 is filtered, Open walks, and
// keeps refusing every link.
func TestOpenFallsBackOnENOSYS(t *testing.T) {
	calls := 0
	openat2 = func(int, string, *unix.OpenHow) (int, error) { calls++; return -1, unix.ENOSYS }
	t.Cleanup(func() { openat2 = unix.Openat2 })
	root := tree(t)
	how := &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	for name, want := range map[string]string{
		"dir/file": "opened ./dir/file", "link-out": "error ELOOP", "dirlink/file": "error ELOOP",
		"dir/up/file": "error ELOOP", "../outside/secret": "error EXDEV", "@/file": "error EXDEV",
	} {
		if got := openIn(t, root, name, how, Open); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if calls != 6 {
		t.Errorf("openat2 was tried %d times, want once per open", calls)
	}
}

// TestOpenRefusesWhatTheWalkCannotKeep: a resolution that may follow a
// link is refused before any open, so a fallback never loosens it.
func TestOpenRefusesWhatTheWalkCannotKeep(t *testing.T) {
	root := tree(t)
	for _, resolve := range []uint64{0, unix.RESOLVE_BENEATH, unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS,
		unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV, unix.RESOLVE_NO_MAGICLINKS} {
		if got := openIn(t, root, "link-out", &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: resolve}, Open); got != "error EINVAL" {
			t.Errorf("resolve %#x: %s, want error EINVAL", resolve, got)
		}
	}
}
