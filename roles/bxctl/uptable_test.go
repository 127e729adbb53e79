package bxctl

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// up runs what the role table says: a new daemon row is started with its
// sockets and the environment its Env column names, and its state
// directories are made; no line of up names it.
func TestUpFollowsTheTable(t *testing.T) {
	old := roles.Table
	roles.Table = append(slices.Clone(old), roles.Spec{Name: "fakerd", User: "boxmaker-fake", Daemon: true, Network: "none",
		Needs: roles.GatewayTable, Env: []string{config.UpstreamEnv, config.CredentialsEnv},
		State: []roles.State{{Path: "fake", Mode: 0o700}}})
	t.Cleanup(func() { roles.Table = old })

	home := t.TempDir()
	paths := config.Paths{Home: home, Config: filepath.Join(home, "etc", "config.toml")}
	env := roleEnv{upstream: "http://127.0.0.1:9"}
	find := func(creds map[string]*syscall.Credential, gateway bool) (int, []string) {
		for _, d := range daemonsFor(paths, env, creds, gateway) {
			if d.Name == "fakerd" {
				return 1, d.Env
			}
		}
		return 0, nil
	}
	if n, _ := find(nil, false); n != 0 {
		t.Error("fakerd, which needs [gateway], runs without it")
	}
	n, got := find(map[string]*syscall.Credential{}, true)
	if want := []string{rolePath, config.UpstreamEnv + "=" + env.upstream}; n != 1 || !slices.Equal(got, want) {
		t.Errorf("as the caller, fakerd's environment is %q, want %q", got, want)
	}
	_, got = find(map[string]*syscall.Credential{"fakerd": {Uid: 1}}, true)
	want := []string{rolePath, config.UpstreamEnv + "=" + env.upstream, config.CredentialsEnv + "=" + units.CredentialDir(home, "fakerd")}
	if !slices.Equal(got, want) {
		t.Errorf("as its own user, fakerd's environment is %q, want %q", got, want)
	}

	if err := prepareHome(paths); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(paths.Join("fake")); err != nil || !fi.IsDir() {
		t.Errorf("prepareHome made no fake/: %v", err)
	}
}

// Every variable the table's Env column names is one up knows how to fill.
func TestUpKnowsEveryTableVariable(t *testing.T) {
	paths := config.Paths{Home: t.TempDir()}
	for _, spec := range roles.Table {
		for _, name := range spec.Env {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s: %v", spec.Name, p)
					}
				}()
				roleEnv{upstream: "u", script: "s"}.value(paths, spec.Name, name, true)
			}()
		}
	}
}
