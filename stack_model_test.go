package main

import (
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
}
