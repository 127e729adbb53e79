package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStackListsWithTheDaemonsDown: sessions and jobs, as text and as
// JSON, print the same on stdout with boxmaker stopped as they did while
// it ran, read from the files.
func TestStackListsWithTheDaemonsDown(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	s.chatOnce("--message", "hi")
	s.chatOnce("--message", "hi again")
	job, err := os.ReadFile("fixtures/jobs/valid/jobs/weekly-review.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.home, "etc", "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.home, "etc", "jobs", "weekly-review.toml"), job, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout := func(args ...string) string {
		out, err := exec.Command(s.bin, append(args, "--home", s.home)...).Output()
		if err != nil {
			t.Fatalf("boxmaker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	lists := [][]string{{"sessions"}, {"sessions", "--json"}, {"jobs"}, {"jobs", "--json"}}
	up := map[string]string{}
	for _, args := range lists {
		up[strings.Join(args, " ")] = stdout(args...)
	}
	if !strings.Contains(up["jobs"], "weekly-review") || strings.Count(up["sessions"], "\nchat-") != 2 {
		t.Fatalf("while up:\n%s%s", up["sessions"], up["jobs"])
	}
	s.stop()
	for _, args := range lists {
		if down := stdout(args...); down != up[strings.Join(args, " ")] {
			t.Errorf("boxmaker %s with the daemons down:\n%s\nwhile up:\n%s", strings.Join(args, " "), down, up[strings.Join(args, " ")])
		}
	}
}
