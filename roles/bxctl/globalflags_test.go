package bxctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles"
)

// TestGlobalHome: --home and --config before the command work for every
// command, and a command's own --home, given too, wins over the root's.
func TestGlobalHome(t *testing.T) {
	home := t.TempDir()
	if code, out, errOut := run(t, "init", "--home", home); code != 0 {
		t.Fatalf("init: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "--home", home, "grants", "check"); code != 0 || !strings.Contains(out, "notes-write") {
		t.Errorf("--home before grants check: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "--home", home, "grants", "explain", "shell", `{"command":"date -u"}`); code != 0 || !strings.Contains(out, "decision: auto") {
		t.Errorf("--home before grants explain: %d\n%s%s", code, out, errOut)
	}
	if _, out, _ := run(t, "--home", filepath.Join(home, "elsewhere"), "status", "--home", home); !strings.HasPrefix(out, "boxmaker is not up in "+home+"\n") {
		t.Errorf("the command's own --home does not win over the root's:\n%s", out)
	}
	if _, out, _ := run(t, "--config", filepath.Join(home, "etc", "config.toml"), "--home", home, "sessions", "show", "nosuch"); strings.Contains(out, "/var/lib/boxmaker") {
		t.Errorf("sessions show under the root's --home:\n%s", out)
	}
	var out, errOut bytes.Buffer
	p := roles.Program{Version: "test", Roles: []roles.Role{{Name: "bxctl", Command: Command}}, Commands: Commands}
	if code := p.Run(context.Background(), []string{"bxctl", "--home", home, "grants", "check"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "notes-write") {
		t.Errorf("bxctl --home before grants check: %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestAuditVerifyDirNeedsNoHome: `audit verify DIR`, from a directory that
// holds a development home and with no home installed, checks DIR and
// does not ask for --home.
func TestAuditVerifyDirNeedsNoHome(t *testing.T) {
	log, err := filepath.Abs(fixtures + "/audit/chain")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, devHome, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, devHome, "etc", "config.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	t.Setenv("BOXMAKER_HOME", "")
	code, out, errOut := run(t, "audit", "verify", log)
	if code != 0 || strings.Contains(errOut, "--home") || !strings.HasPrefix(out, "ok") {
		t.Errorf("audit verify DIR: %d\n%s%s", code, out, errOut)
	}
}
