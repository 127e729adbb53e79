package nofollow

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzWalkAgreesWithOpenat2 holds the walk to the kernel's openat2 on any
// name in the test tree, for the flags that leave the tree as it is: the
// same file or the same error, or EXDEV for a "..". It never may open
// something openat2 refuses.
func FuzzWalkAgreesWithOpenat2(f *testing.F) {
	for _, name := range names {
		f.Add(name, uint8(0))
	}
	f.Add("dir/sub/../../link-out", uint8(1))
	f.Add("/proc/self/fd/3", uint8(2))
	root := tree(f)
	readOnly := []uint64{unix.O_RDONLY, unix.O_PATH, unix.O_PATH | unix.O_NOFOLLOW, unix.O_RDONLY | unix.O_DIRECTORY}
	f.Fuzz(func(t *testing.T, name string, pick uint8) {
		if strings.ContainsRune(name, 0) {
			return
		}
		name = strings.ReplaceAll(name, "@", root)
		r := resolves[int(pick)%len(resolves)]
		how := unix.OpenHow{Flags: readOnly[int(pick/2)%len(readOnly)] | unix.O_CLOEXEC, Resolve: r.resolve}
		kernel := openIn(t, root, name, &how, unix.Openat2)
		walked := openIn(t, root, name, &how, walk)
		if strings.Contains(walked, "outside the tree") && !strings.Contains(kernel, "outside the tree") {
			t.Fatalf("%q: walk escaped: %s (openat2: %s)", name, walked, kernel)
		}
		if walked != kernel && !(stricter(name) && walked == "error EXDEV") {
			t.Errorf("%q %s: walk: %s; openat2: %s", name, r.name, walked, kernel)
		}
	})
}
