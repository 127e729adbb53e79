package units

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

// narSHA256 is the SHA-256 of path serialised as a Nix archive (NAR), which
// is what a fixed-output derivation with outputHashMode "recursive" hashes:
// buildGoModule's vendorHash is this digest of the vendor directory. A NAR
// keeps only the tree's shape, file contents, the executable bit and
// symlink targets; entries go in byte order of their names.
func narSHA256(path string) ([]byte, error) {
	h := sha256.New()
	narString(h, "nix-archive-1")
	if err := narNode(h, path); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// narString writes s as a NAR string: its length as 64-bit little endian,
// the bytes, and zeros to a multiple of 8.
func narString(h hash.Hash, s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	io.WriteString(h, s)
	h.Write(make([]byte, (8-len(s)%8)%8))
}

func narNode(h hash.Hash, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	narString(h, "(")
	narString(h, "type")
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		narString(h, "symlink")
		narString(h, "target")
		narString(h, target)
	case fi.IsDir():
		narString(h, "directory")
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		slices.Sort(names) // Go compares strings bytewise, as Nix does
		for _, name := range names {
			narString(h, "entry")
			narString(h, "(")
			narString(h, "name")
			narString(h, name)
			narString(h, "node")
			if err := narNode(h, filepath.Join(path, name)); err != nil {
				return err
			}
			narString(h, ")")
		}
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		narString(h, "regular")
		if fi.Mode()&0o111 != 0 {
			narString(h, "executable")
			narString(h, "")
		}
		narString(h, "contents")
		narString(h, string(data))
	default:
		return fmt.Errorf("%s: a NAR holds no %s", path, fi.Mode().Type())
	}
	narString(h, ")")
	return nil
}

// narSHA256 agrees with nix-hash, Nix's own, on a tree with every kind of
// node: nested directories, names that sort by byte, an empty file, an
// executable, a symlink, and contents whose length is and is not a
// multiple of 8.
func TestNARHashIsNixHash(t *testing.T) {
	nixHash := require.Tool(t, "nix-hash", "nix-bin")
	dir := filepath.Join(t.TempDir(), "tree")
	files := map[string]string{
		"a/b/c.go": "package c\n", "a/B.txt": "12345678", "Z": "", "a/é": strings.Repeat("x", 1000),
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b/c.go", filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nixHash, "--type", "sha256", dir).Output()
	if err != nil {
		t.Fatalf("nix-hash: %v", err)
	}
	sum, err := narSHA256(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(sum), strings.TrimSpace(string(out)); got != want {
		t.Errorf("narSHA256 gives %s, nix-hash %s", got, want)
	}
	// Changing only the executable bit changes the hash, as it does for Nix.
	if err := os.Chmod(filepath.Join(dir, "a", "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, _ := narSHA256(dir); slices.Equal(again, sum) {
		t.Error("the executable bit is not in the hash")
	}
}
