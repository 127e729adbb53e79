package bxctl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/roles/internal/config"
)

// up reads a --model-script file as the owner, refuses a bad one naming
// the file and line, and hands the text to inferproxy alone.
func TestModelScript(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	text := "[[rule]]\nmatch = '^go$'\ncontent = \"\\u001b[2J gone\"\n\n[[rule]]\ncontent = \"hello\"\n"
	if err := os.WriteFile(good, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := modelScript(good)
	if err != nil || got != text {
		t.Fatalf("modelScript(good) = %q, %v", got, err)
	}
	if got, err := modelScript(""); got != "" || err != nil {
		t.Errorf(`modelScript("") = %q, %v`, got, err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[rule]]\nmatch = 'x'\nanswer = 'y'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := modelScript(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("modelScript(bad): %v, want the file and line 3", err)
	}
	if _, err := modelScript(filepath.Join(dir, "missing.toml")); err == nil {
		t.Error("modelScript of a missing file: no error")
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxModelScript)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := modelScript(big); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("modelScript(big): %v", err)
	}

	paths := config.Paths{Home: dir, Config: filepath.Join(dir, "etc", "config.toml")}
	for _, d := range daemonsFor(paths, roleEnv{upstream: config.ScriptedUpstream, script: text}, nil, true) {
		has := slices.Contains(d.Env, config.ModelScriptEnv+"="+text)
		if want := d.Name == "inferproxy" || d.Name == "inspectd"; has != want {
			t.Errorf("%s's environment %q: has the script %v, want %v", d.Name, d.Env, has, want)
		}
	}
	for _, d := range daemonsFor(paths, roleEnv{upstream: config.ScriptedUpstream}, nil, true) {
		if slices.ContainsFunc(d.Env, func(v string) bool { return strings.HasPrefix(v, config.ModelScriptEnv+"=") }) {
			t.Errorf("without --model-script, %s's environment has a script: %q", d.Name, d.Env)
		}
	}
}
