package policy

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// buildSnippet runs go build on src as a package inside this module,
// returning the compiler's output. The package exists only in a build
// overlay: its source lies in the test's temporary directory and the go
// command sees it at policy/_snippet, so nothing is written into the
// source tree, and ./... patterns run at the same time never see it.
func buildSnippet(t *testing.T, src string) (string, error) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to prove Decision cannot be built outside policy: %v", err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	source := filepath.Join(tmp, "snippet.go")
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(here, "_snippet", "snippet.go"): source}})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{source: []byte(src), filepath.Join(tmp, "overlay.json"): overlay} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goTool, "build", "-overlay", filepath.Join(tmp, "overlay.json"), "./_snippet")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDecisionCannotBeBuiltOutsidePolicy proves the first half of DESIGN.md
// section 5's Decision rule: code outside policy that fills in a Decision
// does not compile. The control snippet, which only names the type, must
// compile, so that a broken build setup cannot pass for the proof.
func TestDecisionCannotBeBuiltOutsidePolicy(t *testing.T) {
	const control = `package snippet

import "boxmaker/policy"

func run(d policy.Decision) (policy.Grant, error) { return d.Runnable() }

var _, _ = run(policy.Decision{})
`
	if out, err := buildSnippet(t, control); err != nil {
		t.Fatalf("the control snippet does not compile, so the proof proves nothing: %v\n%s", err, out)
	}
	forged := map[string]string{
		"named field":      `var _ = policy.Decision{outcome: policy.Allowed}`,
		"positional field": `var _ = policy.Decision{policy.Allowed}`,
	}
	for name, line := range forged {
		out, err := buildSnippet(t, "package snippet\n\nimport \"boxmaker/policy\"\n\n"+line+"\n")
		if err == nil {
			t.Errorf("%s: code outside policy built a Decision", name)
			continue
		}
		if !strings.Contains(out, "unexported field outcome in struct literal of type policy.Decision") {
			t.Errorf("%s: the build failed for another reason:\n%s", name, out)
		}
	}
}

// TestZeroDecisionIsRefused proves the second half: the runner's check
// refuses the zero Decision at run time.
func TestZeroDecisionIsRefused(t *testing.T) {
	var d Decision
	if _, err := d.Runnable(); !errors.Is(err, ErrZeroDecision) {
		t.Errorf("Runnable() on the zero Decision: %v", err)
	}
	if _, err := d.Record(); !errors.Is(err, ErrZeroDecision) {
		t.Errorf("Record() on the zero Decision: %v", err)
	}
	if _, err := Approve(d, "local:alice", nil); err == nil {
		t.Error("Approve accepted the zero Decision")
	}
	if _, err := Refuse(d, wire.ApprovalRefused); err == nil {
		t.Error("Refuse accepted the zero Decision")
	}
	if !d.IsZero() || d.Outcome().String() != "invalid" {
		t.Errorf("zero Decision: IsZero %v, outcome %s", d.IsZero(), d.Outcome())
	}
}

func decideFixture(t *testing.T, tool, arguments string, taint wire.DataClass) Decision {
	t.Helper()
	d, err := Decide(loadValid(t), Request{Tool: tool, Arguments: arguments, Taint: taint, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRunnableTakesAutoAndApprovedOnly(t *testing.T) {
	auto := decideFixture(t, "shell", `{"command":"git status"}`, wire.Private)
	g, err := auto.Runnable()
	if err != nil || g.ID() != "shell-git" {
		t.Fatalf("auto: %v %v", g.ID(), err)
	}
	if args, ok := auto.Input().Args().(wire.ShellArgs); !ok || args.Command != "git status" {
		t.Errorf("auto decision carries %#v", auto.Input().Args())
	}
	denied := decideFixture(t, "shell", `{"command":"rm -rf /"}`, wire.Private)
	if _, err := denied.Runnable(); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "denied_by_grant") {
		t.Errorf("denied: %v", err)
	}
	ask := decideFixture(t, "consult", `{"prompt":"hi"}`, wire.Private)
	if _, err := ask.Runnable(); !errors.Is(err, ErrNotApproved) {
		t.Errorf("ask: %v", err)
	}
	approved, err := Approve(ask, "local:alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := approved.Runnable(); err != nil || g.ID() != "consult-ask" {
		t.Errorf("approved: %v %v", g.ID(), err)
	}
	if _, err := ask.Runnable(); !errors.Is(err, ErrNotApproved) {
		t.Error("Approve changed the decision it was given")
	}
	last := approved.Explain()[len(approved.Explain())-1].String()
	if last != "step 5: consult-ask: approved by local:alice" {
		t.Errorf("explanation ends %q", last)
	}
}

func TestApproveChecksTheDecisionAndTheApprover(t *testing.T) {
	ask := decideFixture(t, "consult", `{"prompt":"hi"}`, wire.Private)
	auto := decideFixture(t, "shell", `{"command":"git status"}`, wire.Private)
	denied := decideFixture(t, "shell", `{"command":"rm -rf /"}`, wire.Private)
	post := "p1xq3d9zjbfwmr8h6tn7s5ky4e"
	empty := ""
	for _, d := range []Decision{auto, denied} {
		if _, err := Approve(d, "local:alice", nil); err == nil {
			t.Errorf("Approve accepted a %s decision", d.Outcome())
		}
	}
	approved, _ := Approve(ask, "local:alice", nil)
	if _, err := Approve(approved, "local:bob", nil); err == nil {
		t.Error("Approve accepted an approved decision")
	}
	bad := []struct {
		approver string
		post     *string
	}{
		{"alice", nil}, {"local:", nil}, {"root:alice", nil}, {"local:al ice", nil},
		{"local:alice", &post}, {"mm:u1", nil}, {"mm:u1", &empty}, {"mm:", &post}, {"local:a\nb", nil},
	}
	for _, b := range bad {
		if _, err := Approve(ask, b.approver, b.post); err == nil {
			t.Errorf("Approve accepted approver %q post %v", b.approver, b.post)
		}
	}
	mm, err := Approve(ask, "mm:u1", &post)
	if err != nil {
		t.Fatal(err)
	}
	post = "changed"
	if who, p := mm.Approver(); who != "mm:u1" || p == nil || *p != "p1xq3d9zjbfwmr8h6tn7s5ky4e" {
		t.Errorf("Approver() = %q %v", who, p)
	}
}

func TestRecordIsTheAuditDecision(t *testing.T) {
	post := "p1"
	ask := decideFixture(t, "consult", `{"prompt":"hi"}`, wire.Private)
	approved, _ := Approve(ask, "mm:u1", &post)
	refused, err := Refuse(ask, wire.ApprovalExpired)
	if err != nil {
		t.Fatal(err)
	}
	grant := func(s string) *string { return &s }
	cases := []struct {
		d    Decision
		want wire.DecisionRecord
	}{
		{decideFixture(t, "shell", `{"command":"git status"}`, wire.Private), wire.DecisionAllowed{Grant: "shell-git"}},
		{approved, wire.DecisionApproved{Grant: "consult-ask", Approver: "mm:u1", Post: grant("p1")}},
		{refused, wire.DecisionDenied{Reason: wire.ApprovalExpired, Grant: grant("consult-ask")}},
		{decideFixture(t, "shell", `{"command":"rm x"}`, wire.Private), wire.DecisionDenied{Reason: wire.DeniedByGrant, Grant: grant("shell-deny")}},
		{decideFixture(t, "notes_search", `{"query":"q"}`, wire.Private), wire.DecisionDenied{Reason: wire.NoGrant}},
	}
	for _, c := range cases {
		got, err := c.d.Record()
		if err != nil {
			t.Errorf("%s: %v", c.d.Outcome(), err)
			continue
		}
		if !sameRecord(got, c.want) {
			t.Errorf("Record() = %#v, want %#v", got, c.want)
		}
	}
	if _, err := ask.Record(); err == nil {
		t.Error("an ask decision has an audit record before the owner answers")
	}
	if _, err := Refuse(ask, wire.NoGrant); err == nil {
		t.Error("Refuse accepted no_grant as a reason")
	}
	if _, err := refused.Runnable(); !errors.Is(err, ErrDenied) {
		t.Errorf("refused decision: %v", err)
	}
}

// sameRecord compares records whose pointers may differ.
func sameRecord(a, b wire.DecisionRecord) bool {
	deref := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	switch a := a.(type) {
	case wire.DecisionAllowed:
		return a == b
	case wire.DecisionApproved:
		b, ok := b.(wire.DecisionApproved)
		return ok && a.Grant == b.Grant && a.Approver == b.Approver && deref(a.Post) == deref(b.Post)
	case wire.DecisionDenied:
		b, ok := b.(wire.DecisionDenied)
		return ok && a.Reason == b.Reason && deref(a.Grant) == deref(b.Grant)
	}
	return false
}
