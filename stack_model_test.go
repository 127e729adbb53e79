package main

import (
	"encoding/json"
	"strings"
	"testing"

	"boxmaker/fixtures/poll"
)

// A model server that does not answer is named as up starts, and the
// first turn's error says what to do about it.
func TestStackDeadModelSaysWhatToDo(t *testing.T) {
	s := startStackUpstream(t, "http://127.0.0.1:9", nil)
	poll.Until(t, "up to name the dead model server", func() bool {
		return strings.Contains(s.log.String(), "up: the model server at http://127.0.0.1:9 does not answer (") &&
			strings.Contains(s.log.String(), "every chat fails until it does")
	})
	_, errText, code := s.chatOnce("--message", "hi")
	if code != 1 || !strings.Contains(errText, "llama-server at http://127.0.0.1:9 did not answer") ||
		!strings.Contains(errText, "the model server is not answering: start llama-server at the address above, or set [infer] upstream in ") {
		t.Errorf("exit %d\n%s", code, errText)
	}
}

// TestStackStatusShowsTheModel: status names the model server and whether
// it answers.
func TestStackStatusShowsTheModel(t *testing.T) {
	s := startStackUpstream(t, "http://127.0.0.1:9", nil)
	out, _ := s.try("status")
	if !strings.Contains(out, "model: http://127.0.0.1:9 DOES NOT ANSWER (") {
		t.Errorf("status:\n%s", out)
	}
}

// TestStackStatusNamesTheScriptedModel: and the scripted model as such.
func TestStackStatusNamesTheScriptedModel(t *testing.T) {
	scripted := startStack(t, nil)
	if out := scripted.run("status"); !strings.Contains(out, "model: the SCRIPTED MODEL") {
		t.Errorf("status with the scripted model:\n%s", out)
	}
	var st struct {
		Up    bool `json:"up"`
		Roles []struct {
			Role  string `json:"role"`
			State string `json:"state"`
		} `json:"roles"`
		Model struct {
			Scripted bool `json:"scripted"`
			Answers  bool `json:"answers"`
		} `json:"model"`
	}
	out := scripted.run("status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.Up || len(st.Roles) == 0 || !st.Model.Scripted || !st.Model.Answers {
		t.Errorf("status --json: %v\n%s", err, out)
	}
	for _, r := range st.Roles {
		if r.Role == "loopd" && r.State != "running" {
			t.Errorf("status --json: loopd %s", r.State)
		}
	}
}
