package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/supervise"
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

	daemons := []supervise.Daemon{{Name: "loopd", Env: []string{rolePath}}, {Name: "inferproxy", Env: []string{rolePath}}}
	withModelScript(daemons, text)
	if want := config.ModelScriptEnv + "=" + text; len(daemons[1].Env) != 2 || daemons[1].Env[1] != want {
		t.Errorf("inferproxy's environment: %q", daemons[1].Env)
	}
	if len(daemons[0].Env) != 1 {
		t.Errorf("loopd got the script: %q", daemons[0].Env)
	}
}
