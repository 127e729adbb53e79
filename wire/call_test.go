package wire

import (
	"errors"
	"testing"
)

// A call is decoded once into its descriptor, its typed arguments and
// their one canonical spelling.
func TestDecodeCallCarriesDescriptorArgsAndCanonicalText(t *testing.T) {
	c := DecodeCall("shell", "{ \"command\" :\n\"\\u006cs\" }")
	tool, ok := c.Tool()
	if !ok || tool.Name != "shell" || tool.Dimension != PatternsDimension || !c.Decoded() || c.Err() != nil {
		t.Fatalf("call %+v", c)
	}
	if args, ok := c.Args().(ShellArgs); !ok || args.Command != "ls" || c.Arguments() != `{"command":"ls"}` || c.Name() != "shell" {
		t.Errorf("args %#v, text %s", c.Args(), c.Arguments())
	}
}

// A call that does not decode stays a Call: its text as sent (the audit
// records it), no arguments, and the reason.
func TestUndecodableCallKeepsWhatWasSent(t *testing.T) {
	unknown := DecodeCall("nope", `{ }`)
	if _, ok := unknown.Tool(); ok || unknown.Decoded() || !errors.Is(unknown.Err(), ErrNoSuchTool) || unknown.Arguments() != `{ }` || unknown.Name() != "nope" {
		t.Errorf("unknown tool: %+v", unknown)
	}
	bad := DecodeCall("shell", `{"command":"ls","x":1}`)
	if _, ok := bad.Tool(); !ok || bad.Decoded() || CodeOf(bad.Err()) != BadMessage || bad.Arguments() != `{"command":"ls","x":1}` || bad.IsZero() {
		t.Errorf("bad arguments: %+v", bad)
	}
	if !(Call{}).IsZero() || (Call{}).Decoded() {
		t.Error("the zero Call is not zero")
	}
}

// WithArgs keeps the descriptor and respells the new arguments; arguments
// of another tool do not fit.
func TestCallWithArgs(t *testing.T) {
	c := DecodeCall("http_fetch", `{"url":"handle:h1"}`)
	sub, err := c.WithArgs(HTTPFetchArgs{URL: "https://example.org/<"})
	if err != nil || sub.Arguments() != `{"url":"https://example.org/<"}` || c.Arguments() != `{"url":"handle:h1"}` {
		t.Fatalf("%v: %s", err, sub.Arguments())
	}
	if tool, _ := sub.Tool(); tool.Name != "http_fetch" {
		t.Errorf("descriptor %q", tool.Name)
	}
	if _, err := c.WithArgs(ShellArgs{Command: "x"}); err == nil {
		t.Error("shell arguments fit an http_fetch call")
	}
	if _, err := DecodeCall("http_fetch", `[]`).WithArgs(HTTPFetchArgs{URL: "x"}); err == nil {
		t.Error("an undecoded call took arguments")
	}
}

// A descriptor that did not come from the catalog decodes through the same
// Call; a hand-built one without a decoder decodes nothing.
func TestCallOfADescriptorOutsideTheCatalog(t *testing.T) {
	row, _ := ToolByName("consult")
	row.Name = "consult"
	if c := row.Call(`{"prompt":"x"}`); !c.Decoded() {
		t.Errorf("a copied row: %v", c.Err())
	}
	if c := (Tool{Name: "mcp__files__read"}).Call(`{}`); c.Decoded() || c.Err() == nil {
		t.Error("a Tool built by hand decoded")
	}
}
