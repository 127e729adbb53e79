package policy

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

func TestSessionStartsPrivateAndTrusted(t *testing.T) {
	for name, s := range map[string]Session{"NewSession": NewSession(), "zero": {}} {
		if s.Taint() != wire.Private || s.Untrusted() {
			t.Errorf("%s: taint %s untrusted %v", name, s.Taint(), s.Untrusted())
		}
	}
}

func TestSessionTaintNeverFallsAndUntrustedNeverClears(t *testing.T) {
	g := func(body string) Grant { return grantSet(t, map[string]string{"g": body})[0] }
	public := g(search("auto", "secret", "result_class = \"public\"\n"))
	secretTrusted := g(search("auto", "secret", "result_class = \"secret\"\nuntrusted = false\n"))
	privateTrusted := g(search("auto", "secret", "untrusted = false\n"))
	steps := []struct {
		grant     Grant
		taint     wire.DataClass
		untrusted bool
	}{
		{privateTrusted, wire.Private, false},
		{public, wire.Private, true}, // public is provenance; it never lowers
		{privateTrusted, wire.Private, true},
		{secretTrusted, wire.Secret, true},
		{public, wire.Secret, true},
		{privateTrusted, wire.Secret, true},
	}
	s := NewSession()
	for i, st := range steps {
		if err := s.ApplyResult(st.grant); err != nil {
			t.Fatal(err)
		}
		if s.Taint() != st.taint || s.Untrusted() != st.untrusted {
			t.Errorf("after result %d: taint %s untrusted %v, want %s %v", i+1, s.Taint(), s.Untrusted(), st.taint, st.untrusted)
		}
	}
	if err := s.ApplyResult(Grant{}); err == nil {
		t.Error("ApplyResult accepted the zero Grant")
	}
}

func TestSessionRoundTrip(t *testing.T) {
	for _, want := range []Session{NewSession(), {}, {taint: wire.Secret, untrusted: true}} {
		b, err := want.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseSession(b)
		if err != nil || got.Taint() != want.Taint() || got.Untrusted() != want.Untrusted() {
			t.Errorf("%s -> %+v, %v", b, got, err)
		}
	}
	b, _ := Session{}.MarshalJSON()
	if string(b) != `{"taint":"private","untrusted":false}` {
		t.Errorf("zero Session marshals as %s", b)
	}
}

func TestParseSessionIsStrict(t *testing.T) {
	cases := map[string]string{
		``:                                      "JSON ends early",
		`null`:                                  "null at the top level",
		`[]`:                                    "must be an object",
		`{}`:                                    `missing field "taint"`,
		`{"taint":"private"}`:                   `missing field "untrusted"`,
		`{"taint":"public","untrusted":false}`:  "must be private or secret",
		`{"taint":"Secret","untrusted":false}`:  "must be public, private or secret",
		`{"taint":null,"untrusted":false}`:      "null at /taint where a string is required",
		`{"taint":"secret","untrusted":null}`:   "null at /untrusted",
		`{"taint":"secret","untrusted":"true"}`: "/untrusted: wrong type",
		`{"taint":"secret","untrusted":true,"extra":1}`:         `unknown field "extra"`,
		`{"Taint":"secret","untrusted":true}`:                   `unknown field "Taint"`,
		`{"taint":"secret","taint":"private","untrusted":true}`: "duplicate object member name",
		`{"taint":"secret","untrusted":true} {}`:                "data after the value",
		`{"taint":"secret","untrusted":true`:                    "unexpected EOF",
	}
	for in, want := range cases {
		if _, err := ParseSession([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	if _, err := RestoreSession(wire.Public, false); err == nil {
		t.Error("RestoreSession accepted a public taint")
	}
	if s, err := RestoreSession(wire.Secret, true); err != nil || s.Taint() != wire.Secret || !s.Untrusted() {
		t.Errorf("RestoreSession: %+v %v", s, err)
	}
}
