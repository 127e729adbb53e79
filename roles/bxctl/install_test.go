package bxctl

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/roles"
	"boxmaker/roles/internal/units"

	"github.com/urfave/cli/v3"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from what the code prints now")

// runInstall runs `boxmaker install ARGS...`.
func runInstall(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	p := roles.Program{Version: "test", Commands: func() []*cli.Command { return []*cli.Command{installCommand()} }}
	var out, errOut bytes.Buffer
	code := p.Run(context.Background(), append([]string{"boxmaker", "install"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with go test ./roles/bxctl -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (after a deliberate change: go test ./roles/bxctl -run %s -update, and read the diff)\n%s",
			path, t.Name(), firstDifference(string(want), got))
	}
}

func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d:\nwant: %s\ngot:  %s", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("want %d lines, got %d", len(w), len(g))
}

// writeConfig makes prefix/etc/boxmaker/config.toml.
func writeConfig(t *testing.T, prefix, text string) {
	t.Helper()
	path := units.LayoutUnder(prefix).Config()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInstallDryRunGolden is the production install on a host with a
// gateway and a consult grant: every command and every unit, as --dry-run
// prints them.
func TestInstallDryRunGolden(t *testing.T) {
	site := units.NewSite(units.DefaultLayout(), "http://127.0.0.1:8080", "mattermost-bot")
	site.GrantSecrets = []string{"consult-api"}
	plan, err := units.NewPlan(site)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "install-systemd.golden", units.Script(plan, "./boxmaker"))
}

// TestInstallDryRunPrefix runs the command itself: the config under the
// prefix decides the units, and nothing is created.
func TestInstallDryRunPrefix(t *testing.T) {
	t.Setenv("BOXMAKER_UPSTREAM", "")
	prefix := t.TempDir()
	writeConfig(t, prefix, "[infer]\nupstream = \"http://10.1.2.3:8080\"\n")
	code, out, errOut := runInstall(t, "--systemd", "--prefix", prefix, "--dry-run")
	if code != 0 {
		t.Fatalf("status %d: %s", code, errOut)
	}
	exe, _ := os.Executable()
	golden(t, "install-prefix.golden", strings.NewReplacer(prefix, "$PREFIX", exe, "$EXE").Replace(out))
	var made []string
	filepath.WalkDir(prefix, func(path string, _ fs.DirEntry, _ error) error {
		made = append(made, strings.TrimPrefix(path, prefix))
		return nil
	})
	if !slices.Equal(made, []string{"", "/etc", "/etc/boxmaker", "/etc/boxmaker/config.toml"}) {
		t.Errorf("--dry-run changed the tree: %v", made)
	}
}

func TestInstallUsage(t *testing.T) {
	t.Setenv("BOXMAKER_UPSTREAM", "")
	for _, args := range [][]string{{}, {"--systemd", "extra"}, {"--prefix", "/tmp"}} {
		if code, _, errOut := runInstall(t, args...); code != 2 {
			t.Errorf("%q: status %d, want 2 (%s)", args, code, errOut)
		}
	}
	t.Setenv("BOXMAKER_UPSTREAM", "http://10.9.9.9:1")
	code, _, errOut := runInstall(t, "--systemd", "--prefix", t.TempDir(), "--dry-run")
	if code != 1 || !strings.Contains(errOut, "units never see it") {
		t.Errorf("BOXMAKER_UPSTREAM set: status %d, %q", code, errOut)
	}
}

func TestInstallNixData(t *testing.T) {
	code, out, _ := runInstall(t, "--nix-data")
	want, _ := units.NixData()
	if code != 0 || out != string(want) {
		t.Errorf("status %d; --nix-data is not units.NixData", code)
	}
}
