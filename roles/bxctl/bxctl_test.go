package bxctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"boxmaker/roles"

	"github.com/pelletier/go-toml/v2"
)

// run runs bxctl's commands as `boxmaker ARGS...` and returns the exit
// status and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	p := roles.Program{Version: "test", Roles: []roles.Role{{Name: "bxctl", Command: Command}}, Commands: Commands}
	var out, errOut bytes.Buffer
	code := p.Run(context.Background(), append([]string{"boxmaker"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

const fixtures = "../../fixtures"

func TestGrantsCheck(t *testing.T) {
	code, out, errOut := run(t, "grants", "check", fixtures+"/grants/valid")
	if code != 0 {
		t.Fatalf("valid grants: status %d\n%s%s", code, out, errOut)
	}
	for _, id := range []string{"consult-ask", "fetch-docs", "notes-secret", "old-hostname", "shell-git"} {
		if !strings.Contains(out, "\n"+id+" ") {
			t.Errorf("the table lacks %s:\n%s", id, out)
		}
	}
	code, out, errOut = run(t, "grants", "check", fixtures+"/grants/invalid")
	if code != 1 || !strings.Contains(errOut, "files are invalid") {
		t.Fatalf("invalid grants: status %d, stderr %q", code, errOut)
	}
	for _, gist := range []string{"unknown key max_tain", "mode must be auto, ask or deny", "no tool named rm",
		"pattern 1 is not a valid RE2 expression", "TOML syntax error on line 1", "expires needs a UTC offset"} {
		if !strings.Contains(out, gist) {
			t.Errorf("output lacks %q", gist)
		}
	}
	if code, _, _ := run(t, "grants", "check", "a", "b"); code != 2 {
		t.Errorf("two DIRs: status %d, want 2", code)
	}
}

// explainStatus is the exit status of `grants explain` whose decision line
// is want: 1 for a denial, 0 for auto and ask (docs/cli.md).
func explainStatus(want string) int {
	if strings.Contains(want, "decision: denied") {
		return 1
	}
	return 0
}

func TestGrantsExplain(t *testing.T) {
	explain := func(args ...string) (int, string) {
		code, out, errOut := run(t, append([]string{"grants", "explain", "--grants", fixtures + "/grants/valid", "--at", "2026-09-17T08:05:00.000Z"}, args...)...)
		return code, out + errOut
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"http_fetch", `{"url":"https://docs.python.org/3/"}`}, "decision: auto: runs now under grant fetch-docs"},
		{[]string{"http_fetch", `{"url":"https://wikipedia.org/"}`}, "decision: ask: waits for the owner's approval under grant fetch-ask"},
		{[]string{"--taint", "secret", "http_fetch", `{"url":"https://docs.python.org/3/"}`}, "decision: denied taint_too_high (grant fetch-docs)"},
		{[]string{"shell", `{"command":"rm -rf /"}`}, "decision: denied denied_by_grant (grant shell-deny)"},
		{[]string{"file_read", `{"path":"/etc/hostname"}`}, "decision: denied grant_expired (grant old-hostname)"},
		{[]string{"file_read", `{"path":"/nowhere"}`}, "decision: denied no_grant"},
		{[]string{"--at", "2025-12-31T23:00:00Z", "file_read", `{"path":"/etc/hostname"}`}, "decision: auto"},
	} {
		code, out := explain(c.args...)
		if code != explainStatus(c.want) || !strings.Contains(out, c.want) {
			t.Errorf("%q: status %d, want %d\n%s\nwant %q", c.args, code, explainStatus(c.want), out, c.want)
		}
	}
	if code, out := explain("nosuchtool", "{}"); code != 1 || !strings.Contains(out, `no tool named "nosuchtool"; the tools are http_fetch,`) {
		t.Errorf("an unknown tool: status %d, want 1 naming it and the tools\n%s", code, out)
	}
	for _, bad := range [][]string{{"http_fetch"}, {"--taint", "Secret", "shell", "{}"}, {"--at", "tomorrow", "shell", "{}"}} {
		if code, out := explain(bad...); code != 2 {
			t.Errorf("%q: status %d, want 2\n%s", bad, code, out)
		}
	}
}

// `boxmaker audit verify` says of each fixture directory what cases.toml says.
func TestAuditVerifyFixtures(t *testing.T) {
	var table struct {
		Case []struct {
			Dir     string `toml:"dir"`
			OK      bool   `toml:"ok"`
			Records int    `toml:"records"`
			HeadSeq int    `toml:"head_seq"`
			Head    string `toml:"head"`
			BadFile string `toml:"bad_file"`
			BadLine int    `toml:"bad_line"`
			Note    string `toml:"note"`
		} `toml:"case"`
	}
	data, err := os.ReadFile(fixtures + "/audit/cases.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := toml.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	for _, c := range table.Case {
		t.Run(c.Dir, func(t *testing.T) {
			code, out, errOut := run(t, "audit", "verify", fixtures+"/audit/"+c.Dir)
			if c.OK {
				want := fmt.Sprintf("ok: %d records in 2 files, head seq %d %s\n", c.Records, c.HeadSeq, c.Head)
				if code != 0 || out != want {
					t.Errorf("status %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
				}
				return
			}
			want := fmt.Sprintf("%s line %d:", c.BadFile, c.BadLine)
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("status %d, stderr %q; want status 1 naming %q", code, errOut, want)
			}
		})
	}
}

func TestAuditHeadAndTail(t *testing.T) {
	code, out, _ := run(t, "audit", "head", fixtures+"/audit/chain")
	if code != 0 || out != "head seq 5 d334ae511b974b4f69d6c9c8cbd466fcca6e37e3a25c299357a3c9d88c92aba7\n" {
		t.Errorf("head: %d %q", code, out)
	}
	code, out, _ = run(t, "audit", "tail", "-n", "2", fixtures+"/audit/chain")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], `{"seq":4,`) || !strings.HasPrefix(lines[1], `{"seq":5,`) {
		t.Errorf("tail: %d %q", code, out)
	}
	if code, _, _ := run(t, "audit", "tail", "-n", "0", fixtures+"/audit/chain"); code != 2 {
		t.Errorf("tail -n 0: status %d, want 2", code)
	}
	home := t.TempDir()
	if code, _, errOut := run(t, "audit", "verify", "--home", home); code != 1 || !strings.Contains(errOut, "audit") {
		t.Errorf("missing audit dir: status %d %q", code, errOut)
	}
}
