package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// `boxmaker chat --message` as a script runs it: approvals refused at
// once or after a stated bound, the turn as JSON, and a denial that says
// what it means and how to see why.

// chatOnce runs one chat message, returning stdout, stderr and the exit status.
func (s *stack) chatOnce(args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(s.bin, append(append([]string{"chat"}, args...), "--home", s.home)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestStackMessageApprovals: --approvals=deny refuses at once, audited as
// refused; the default waits at most --approval-wait, then refuses; --json
// is the turn as one object.
func TestStackMessageApprovals(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	start := time.Now()
	out, errText, code := s.chatOnce("--message", "printf one", "--approvals=deny", "--json")
	if code != 1 || !strings.Contains(errText, "refused (--approvals=deny)") {
		t.Errorf("--approvals=deny: exit %d\n%s", code, errText)
	}
	var turn struct {
		Session string `json:"session"`
		Reply   string `json:"reply"`
		Calls   []struct {
			Call      int    `json:"call"`
			Tool      string `json:"tool"`
			Arguments string `json:"arguments"`
			Outcome   string `json:"outcome"`
			Detail    string `json:"detail"`
		} `json:"calls"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &turn); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if !strings.HasPrefix(turn.Session, "chat-") || turn.Reply != "(day model) the tool answered" || len(turn.Calls) != 1 ||
		turn.Calls[0].Tool != "shell" || turn.Calls[0].Arguments != `{"command":"printf one"}` ||
		turn.Calls[0].Outcome != "denied" || turn.Calls[0].Detail != "approval_refused" || turn.Error == "" {
		t.Errorf("--json: %+v", turn)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("--approvals=deny took %s", took)
	}
	if tail := s.run("audit", "tail", "-n", "1"); !strings.Contains(tail, `"reason":"approval_refused"`) {
		t.Errorf("the refusal is not audited: %s", tail)
	}

	start = time.Now()
	_, errText, code = s.chatOnce("--message", "printf two", "--approval-wait", "2s")
	if code != 1 || !strings.Contains(errText, "within 2s, or it is refused") || !strings.Contains(errText, "not answered within 2s: refused") {
		t.Errorf("--approval-wait 2s: exit %d\n%s", code, errText)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("--approval-wait 2s took %s", took)
	}
}

// TestStackDenialSaysWhy: a call no grant allows is named in words, with
// the grants explain line for its own arguments, which shows the denial.
func TestStackDenialSaysWhy(t *testing.T) {
	s := startStackScript(t, dayModel, map[string]string{"sleep-auto": dayGrants["sleep-auto"]})
	_, errText, code := s.chatOnce("--message", "printf one")
	if code != 1 || !strings.Contains(errText, "call 1 was denied: no grant allows it: no grant file for this tool matches these arguments; see why with: boxmaker grants explain shell '{\"command\":\"printf one\"}'") {
		t.Fatalf("exit %d\n%s", code, errText)
	}
	line := regexp.MustCompile(`see why with: boxmaker (grants explain shell '(.*)')`).FindStringSubmatch(errText)
	explained, _ := s.try("grants", "explain", "shell", line[2])
	if !strings.Contains(explained, "decision: denied no_grant") {
		t.Errorf("the explain line shows:\n%s", explained)
	}
}

// TestStackListsAsJSON: sessions, notes and jobs print JSON arrays a
// script can read.
func TestStackListsAsJSON(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	s.chatOnce("--message", "hi")
	var sessions []struct {
		Session string `json:"session"`
		Epoch   int    `json:"epoch"`
		Turns   int    `json:"turns"`
		Updated string `json:"updated"`
	}
	if out := s.run("sessions", "--json"); json.Unmarshal([]byte(out), &sessions) != nil || len(sessions) != 1 || sessions[0].Turns != 1 || sessions[0].Epoch != 1 || sessions[0].Updated == "" {
		t.Errorf("sessions --json: %s", out)
	}
	var notes []struct {
		Path   string `json:"path"`
		Folder bool   `json:"folder"`
	}
	if out := s.run("notes", "--json"); json.Unmarshal([]byte(out), &notes) != nil || len(notes) == 0 {
		t.Errorf("notes --json: %s", out)
	}
	var jobs []struct {
		Job string `json:"job"`
	}
	if out := s.run("jobs", "--json"); json.Unmarshal([]byte(out), &jobs) != nil || jobs == nil {
		t.Errorf("jobs --json: %q", out)
	}
}

// TestStackScriptedModelShowsEveryTool: the default scripted model calls
// each built-in tool for its phrase, and its help names them all.
func TestStackScriptedModelShowsEveryTool(t *testing.T) {
	s := startStack(t, nil)
	help, _, _ := s.chatOnce("--message", "help")
	for _, c := range []struct{ message, tool string }{
		{"fetch https://example.org/", "http_fetch"},
		{"read note welcome.md", "notes_read"},
		{"write note scratch.md: milk and eggs", "notes_write"},
		{"search notes welcome", "notes_search"},
		{"read file /etc/hostname", "file_read"},
		{"run date -u", "shell"},
		{"consult what is the capital of France?", "consult"},
	} {
		if !strings.Contains(help, "("+c.tool+")") {
			t.Errorf("the scripted model's help does not name %s:\n%s", c.tool, help)
		}
		_, errText, _ := s.chatOnce("--message", c.message, "--approvals=deny")
		if !regexp.MustCompile(`call \d+: ` + c.tool + ` \{`).MatchString(errText) {
			t.Errorf("%q did not call %s:\n%s", c.message, c.tool, errText)
		}
	}
}
