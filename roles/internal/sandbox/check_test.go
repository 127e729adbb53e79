package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSaysHowToFix(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing"): "apt-get install bubblewrap",
		dir:                           "not a regular file",
	} {
		_, err := Check(context.Background(), path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s) = %v, want an error with %q", path, err, want)
		}
	}
	if os.Geteuid() != 0 { // root may execute any file with an x bit, and reads past modes
		if _, err := Check(context.Background(), notExec); err == nil || !strings.Contains(err.Error(), "chmod") {
			t.Errorf("Check(non-executable) = %v", err)
		}
	}
}

func TestCheckPasses(t *testing.T) {
	bwrap := requireSandbox(t)
	caps, err := Check(context.Background(), bwrap)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(caps.Bwrap, "bubblewrap") || caps.LandlockABI < 1 {
		t.Fatalf("Check = %+v", caps)
	}
	t.Logf("%s, landlock ABI %d, process limit %v", caps.Bwrap, caps.LandlockABI, caps.ProcessLimit)
}
