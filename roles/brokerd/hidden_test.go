package brokerd

import (
	"path/filepath"
	"slices"
	"testing"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
)

// What no sandbox may mount follows the role table's State column: a new
// role's state directory is on the list without a word here, and memory/,
// which the table marks for the notes tools, is not.
func TestNoSandboxMountsARoleState(t *testing.T) {
	old := roles.Table
	roles.Table = append(slices.Clone(old), roles.Spec{Name: "fakerd", User: "boxmaker-fake", Daemon: true, Network: "none",
		State: []roles.State{{Path: "fake", Mode: 0o700}, {Path: "fake/seen", Mode: 0o600, File: true}}})
	t.Cleanup(func() { roles.Table = old })
	t.Setenv(config.CredentialsEnv, "")

	home := t.TempDir()
	etc := filepath.Join(home, "etc")
	paths := config.Paths{Home: home, Config: filepath.Join(etc, "config.toml"), Grants: filepath.Join(etc, "grants"),
		Secrets: filepath.Join(etc, "secrets"), Jobs: filepath.Join(etc, "jobs")}
	got := (&runner{paths: paths}).statePaths()
	want := []string{paths.Join("run"), paths.Join("audit"), paths.Join("broker"), paths.Join("sessions"), paths.Join("fake"),
		paths.Grants, paths.Secrets, paths.Config}
	for _, p := range want {
		if !slices.Contains(got, p) {
			t.Errorf("statePaths() lacks %s: %q", p, got)
		}
	}
	for _, p := range []string{paths.Join("memory"), paths.Join("fake", "seen")} {
		if slices.Contains(got, p) {
			t.Errorf("statePaths() has %s: %q", p, got)
		}
	}
	if len(got) != len(roles.Hidden())+4 {
		t.Errorf("statePaths() = %q: not run/, the table's hidden state and etc/'s three", got)
	}
}
