package bxctl

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/supervise"
	"boxmaker/wire"

	"golang.org/x/term"
)

// screenOf is a termView writing into a buffer, as a terminal would get it.
func screenOf() (*termView, *bytes.Buffer) {
	var out bytes.Buffer
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{strings.NewReader(""), &out}, chatPrompt)
	return &termView{t: t}, &out
}

// TestActivityStartsItsOwnLine: a tool call shown after dimmed reasoning
// (which ends mid-line) starts on a line of its own, and so does the reply.
func TestActivityStartsItsOwnLine(t *testing.T) {
	v, out := screenOf()
	v.reasoning("I should read it.")
	v.activity("call 1: notes_read")
	v.reasoning("Now I know.")
	v.delta("The note says hi.")
	v.done("")
	want := dim + "I should read it." + reset + "\r\n" + dim + "· call 1: notes_read" + reset + "\r\n" +
		dim + "Now I know." + reset + "\r\n" + "The note says hi.\r\n"
	if got := out.String(); got != want {
		t.Errorf("the screen got\n%q\nwant\n%q", got, want)
	}
}

// TestBannerNamesTheScriptedModel: chat's first line says the scripted
// model answers when the home's boxmaker up says so in run/up.json, or,
// without up, when config.toml's upstream is the scripted one.
func TestBannerNamesTheScriptedModel(t *testing.T) {
	paths, err := config.Resolve(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if scriptedModel(paths) {
		t.Error("a home without up.json has the scripted model")
	}
	// Under systemd there is no up.json: config.toml says.
	t.Setenv("BOXMAKER_UPSTREAM", "")
	os.MkdirAll(filepath.Dir(paths.Config), 0o755)
	if err := os.WriteFile(paths.Config, []byte("[infer]\nupstream = \"scripted:\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !scriptedModel(paths) {
		t.Error("a home whose config.toml names the scripted upstream, without up.json, has no scripted model")
	}
	os.MkdirAll(filepath.Dir(upStatePath(paths)), 0o755)
	for _, scripted := range []bool{true, false} {
		writeUpState(paths, []supervise.Status{}, scripted, "")
		if got := strings.Contains(banner(scriptedModel(paths)), "SCRIPTED MODEL"); got != scripted {
			t.Errorf("up with scripted=%t: the banner says the scripted model: %t", scripted, got)
		}
	}
}

// lines is a view that keeps the activity lines.
type lines struct {
	plainView
	got []string
}

func (l *lines) activity(line string) { l.got = append(l.got, line) }

// TestSessionIsNamedOnce: every turn's events name the session; the chat
// shows it once, and again only when it changes.
func TestSessionIsNamedOnce(t *testing.T) {
	v := &lines{}
	c := &chatter{view: v}
	a, _ := wire.ParseSessionID("chat-a")
	b, _ := wire.ParseSessionID("chat-b")
	for _, s := range []wire.SessionID{a, a, a, b, b} {
		c.event(context.Background(), wire.SessionEvent{Session: s})
	}
	if want := []string{"session chat-a", "session chat-b"}; !slices.Equal(v.got, want) {
		t.Errorf("shown %q, want %q", v.got, want)
	}
}
