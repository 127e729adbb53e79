package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateHelp = flag.Bool("update", false, "rewrite testdata/*.golden from what the program prints now")

// The owner's help and the shell completion scripts, as goldens: the top
// level lists the owner's commands by category and none of the daemons
// (which still run by name); completion prints a script per shell.
func TestHelpAndCompletionGoldens(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"help.golden", []string{"boxmaker", "--help"}},
		{"completion-bash.golden", []string{"boxmaker", "completion", "bash"}},
		{"completion-zsh.golden", []string{"boxmaker", "completion", "zsh"}},
		{"completion-fish.golden", []string{"boxmaker", "completion", "fish"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			p := program()
			p.Version = "v9.9.9-test"
			var out, errOut bytes.Buffer
			if code := p.Run(context.Background(), c.args, &out, &errOut); code != 0 {
				t.Fatalf("%q: exit %d\n%s", c.args, code, errOut.String())
			}
			path := filepath.Join("testdata", c.golden)
			if *updateHelp {
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestHelpAndCompletionGoldens -update)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%q printed:\n%s\nwant (%s):\n%s", c.args, out.String(), path, want)
			}
		})
	}
}

// Mistyped commands and flags get a suggestion; a daemon hidden from the
// help still runs by name.
func TestSuggestionsAndHiddenRoles(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"boxmaker", "chta"}, 2, `no role or command named "chta"; valid: `},
		{[]string{"boxmaker", "chta"}, 2, `; did you mean "chat"?`},
		{[]string{"boxmaker", "status", "--hme", "x"}, 2, "did you mean --home?"},
		{[]string{"boxmaker", "grants", "chekc"}, 2, `did you mean "check"?`},
		{[]string{"boxmaker", "loopd", "--help"}, 0, "run the agent loop"},
	} {
		var out, errOut bytes.Buffer
		code := program().Run(context.Background(), c.args, &out, &errOut)
		if code != c.code || !bytes.Contains(append(out.Bytes(), errOut.Bytes()...), []byte(c.want)) {
			t.Errorf("%q: exit %d\n%s%s\nwant %q", c.args, code, out.String(), errOut.String(), c.want)
		}
	}
}
