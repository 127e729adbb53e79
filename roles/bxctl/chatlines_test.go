package bxctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/wire"
)

// audit tail shows what a terminal could hide or interpret as \u escapes,
// and the line stays JSON with the same value.
func TestJSONForTerminal(t *testing.T) {
	line := "{\"arguments\":\"{\\\"url\\\":\\\"https://x/a\u202eexe\u200b\x7f\u0085\U000e0041\\\"}\",\"tool\":\"http_fetch\",\"é\":\"ok\"}"
	got := jsonForTerminal(line)
	want := `{"arguments":"{\"url\":\"https://x/a\u202eexe\u200b\u007f\u0085\udb40\udc41\"}","tool":"http_fetch","é":"ok"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var before, after map[string]string
	if err := json.Unmarshal([]byte(line), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &after); err != nil {
		t.Fatalf("the escaped line is not JSON: %v", err)
	}
	if before["arguments"] != after["arguments"] {
		t.Errorf("the value changed: %q, then %q", before["arguments"], after["arguments"])
	}
}

// An answer at the prompt for an approval answered elsewhere says so,
// rather than a bare "unknown".
func TestAnswerLine(t *testing.T) {
	if got := answerLine("ap-1", wire.OutcomeApproved); got != "approval ap-1: approved" {
		t.Errorf("approved: %q", got)
	}
	if got := answerLine("ap-1", wire.OutcomeUnknown); !strings.Contains(got, "answered elsewhere") {
		t.Errorf("unknown: %q", got)
	}
}

// With no --home and no BOXMAKER_HOME, a command run where boxmaker is not
// installed but a development home sits in .state/ says how to reach it.
func TestDevelopmentHomeHint(t *testing.T) {
	if _, err := os.Stat("/etc/boxmaker/config.toml"); err == nil {
		require.Elsewhere(t, "boxmaker is installed on this machine, so the production home is the right answer")
	}
	t.Setenv("BOXMAKER_HOME", "")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".state", "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".state", "etc", "config.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, _, errOut := run(t, "approvals")
	if code != 2 || !strings.Contains(errOut, "add --home .state") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if _, _, errOut := run(t, "approvals", "--home", ".state"); strings.Contains(errOut, "add --home") {
		t.Errorf("--home .state still gets the hint: %q", errOut)
	}
}
