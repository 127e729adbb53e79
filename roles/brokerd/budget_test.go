package brokerd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// The attack of issue 23, finding 1: reading the same secret note again
// gave a new handle with fresh questions, so a 32-byte secret was rebuilt
// 16 bits at a time. The questions belong to the content: a new handle to
// the same data has none left, and nothing more reaches the model.
func TestReReadingASecretGivesNoFreshQuestions(t *testing.T) {
	h := newHome(t, "[inspect]\nmax_questions = 2\n", inspectGrants(inspectDeclassifyGrant))
	h.start()
	infer := h.startFakeInfer("1", "2", "3", "4")
	const digit = `{"handle":"%s","question":"The PIN's digit?","answer":{"type":"integer","min":0,"max":9}}`
	h.readHandle("s1") // h1
	h.mustResult("s1", "inspect", strings.Replace(digit, "%s", "h1", 1))
	h.readHandle("s1") // h2, the same content
	h.mustResult("s1", "inspect", strings.Replace(digit, "%s", "h2", 1))
	h.readHandle("s1") // h3, the same content again
	for _, name := range []string{"h1", "h2", "h3"} {
		got := h.toolCall("s1", "inspect", strings.Replace(digit, "%s", name, 1))
		f, ok := got.(wire.Failed)
		if !ok || !strings.Contains(f.Message, "inspect.max_questions") || strings.Contains(f.Message, "PIN 0000") {
			t.Errorf("a third question about the same content, through %s: %#v", name, got)
		}
	}
	if n := len(infer.asked()); n != 2 {
		t.Errorf("%d questions about one content reached the model, want 2", n)
	}
	// Another session's budget is its own.
	h.readHandle("s2")
	h.mustResult("s2", "inspect", strings.Replace(digit, "%s", "h1", 1))
}

// The declassified bits a session takes out of secret data are bounded
// across every content: many different secrets, a few questions each, add
// up to inspect.max_declassified_bits, and an answer that would pass it is
// refused before it is asked.
func TestDeclassifiedBitsAreBoundedAcrossSecrets(t *testing.T) {
	grants := inspectGrants(inspectDeclassifyGrant)
	h := newHome(t, "[inspect]\nmax_declassified_bits = 20\n", grants)
	h.write("memory/secret/other.md", "PIN 1234\n")
	h.start()
	infer := h.startFakeInfer("4242", "true", "true")
	const wide = `{"handle":"%s","question":"The PIN?","answer":{"type":"integer","min":0,"max":65535}}`
	h.readHandle("s1")                                             // h1
	h.mustResult("s1", "notes_read", `{"path":"secret/other.md"}`) // h2
	if r := h.mustResult("s1", "inspect", strings.Replace(wide, "%s", "h1", 1)); r.Class != wire.Public {
		t.Fatalf("the first declassified answer: %+v", r)
	}
	got := h.toolCall("s1", "inspect", strings.Replace(wide, "%s", "h2", 1))
	if f, ok := got.(wire.Failed); !ok || !strings.Contains(f.Message, "inspect.max_declassified_bits") || strings.Contains(f.Message, "1234") {
		t.Fatalf("16 more bits past 16 of 20, about another secret: %#v", got)
	}
	if r := h.mustResult("s1", "inspect", `{"handle":"h2","question":"Is it even?","answer":{"type":"bool"}}`); r.Content != "true" {
		t.Fatalf("one bit within the bound: %+v", r)
	}
	if n := len(infer.asked()); n != 2 {
		t.Errorf("%d questions reached the model, want 2: the refused one must not", n)
	}
	if st := h.state("s1"); st.Taint != wire.Private {
		t.Errorf("the session after declassified answers: %+v", st)
	}
}
