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
	r := &runner{paths: paths}
	got := r.statePaths()
	want := []string{paths.Join("run")}
	for _, dir := range []string{"audit", "broker", "sessions", "fake"} {
		want = append(want, paths.Join(dir))
	}
	want = append(want, paths.Grants, paths.Secrets, paths.Config)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("statePaths() = %q\nwant %q", got, want)
	}
}
