package brokerd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// notesReadAny reads any note under notes/ at any taint, its result kept
// in the session as usual (no handle).
const notesReadAny = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"

// A call that never ran answers why; the reason may quote its arguments,
// which held a handle's content. That content must not reach the model
// while the session stays clean: here a secret that looks like a note's
// path is read as one, the note is not there, and the failure would name it.
func TestAFailureBeforeTheRunDoesNotQuoteAHandle(t *testing.T) {
	grants := handleGrants()
	grants["notes-any"] = notesReadAny
	h := newHome(t, "", grants)
	h.write("memory/secret/token.md", "notes/sk-live-4242")
	h.start()
	ref := h.mustResult("s1", "notes_read", `{"path":"secret/token.md"}`)
	if !strings.Contains(ref.Content, `"handle":"h1"`) {
		t.Fatalf("the token was not kept as a handle: %+v", ref)
	}
	got := h.toolCall("s1", "notes_read", `{"path":"handle:h1"}`)
	st := h.state("s1")
	if f, ok := got.(wire.Failed); !ok || strings.Contains(f.Message, "4242") && st.Taint != wire.Secret {
		t.Fatalf("the handle's content reached the model (%#v) and the session stayed at %v", got, st.Taint)
	}
}

// Each question counts against every handle it reads, the question's own
// handle reference too: else a fresh handle per question would give a
// secret handle, passed as the question, questions without end.
func TestAQuestionCountsAgainstEveryHandleItReads(t *testing.T) {
	grants := inspectGrants(inspectDeclassifyGrant)
	h := newHome(t, "[inspect]\nmax_questions = 2\n", grants)
	h.start()
	infer := h.startFakeInfer("true", "true", "true")
	h.readHandle("s1") // h1: the secret
	for i, name := range []string{"h2", "h3", "h4"} {
		h.readHandle("s1")
		args := `{"handle":"` + name + `","question":"handle:h1","answer":{"type":"bool"}}`
		got := h.toolCall("s1", "inspect", args)
		if i < 2 {
			if _, ok := got.(wire.Result); !ok {
				t.Fatalf("question %d: %#v", i+1, got)
			}
			continue
		}
		if f, ok := got.(wire.Failed); !ok || !strings.Contains(f.Message, "inspect.max_questions") {
			t.Errorf("a third question reading h1: %#v", got)
		}
	}
	if n := len(infer.asked()); n != 2 {
		t.Errorf("%d questions reading h1 reached the model, want 2", n)
	}
}

// An approval says the call is untrusted when a handle it refers to is,
// as it says the taint the handles raised it to: that flag is why an auto
// grant with when_untrusted = "ask" asks, and the owner must see it.
func TestAnApprovalShowsAnUntrustedHandlesFlag(t *testing.T) {
	grants := map[string]string{
		"page": "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = true\nresult = \"handle\"\n[constraints]\npaths = [\"notes\"]\n",
		"echo": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \"public\"\nuntrusted = false\nwhen_untrusted = \"ask\"\n[constraints]\npatterns = [\"buy .*\\\\n\"]\n",
	}
	h := newHome(t, "", grants)
	h.start()
	h.mustResult("s1", "notes_read", `{"path":"notes/todo.md"}`)
	if st := h.state("s1"); st.Untrusted {
		t.Fatalf("the handle made the session untrusted: %+v", st)
	}
	go h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: 7, Tool: "shell", Arguments: `{"command":"handle:h1"}`})
	a := waitForPending(t, h)
	if !a.SessionUntrusted || a.Arguments != `{"command":"handle:h1"}` {
		t.Errorf("the approval of a call given an untrusted handle: %+v", a)
	}
}
