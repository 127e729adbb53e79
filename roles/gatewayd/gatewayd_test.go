package gatewayd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

func TestReadToken(t *testing.T) {
	secrets := t.TempDir()
	creds := t.TempDir()
	os.WriteFile(filepath.Join(secrets, "mattermost-bot"), []byte("from-secrets\n"), 0o600)
	os.WriteFile(filepath.Join(creds, "mattermost-bot"), []byte("from-systemd\r\n"), 0o600)
	os.WriteFile(filepath.Join(secrets, "two-lines"), []byte("abc\ndef\n"), 0o600)
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	if tok, err := ReadToken(secrets, "mattermost-bot"); tok != "from-secrets" || err != nil {
		t.Errorf("secrets: %q %v", tok, err)
	}
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	if tok, err := ReadToken(secrets, "mattermost-bot"); tok != "from-systemd" || err != nil {
		t.Errorf("credentials: %q %v", tok, err)
	}
	for name, want := range map[string]string{"absent": "does not exist", "two-lines": "alone, on one line", "../x": "must be a file name"} {
		if _, err := ReadToken(secrets, name); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "abc") {
			t.Errorf("%s: %v; want an error saying %q and not the content", name, err, want)
		}
	}
}

func TestCommand(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	os.MkdirAll(paths.Secrets, 0o700)
	os.WriteFile(filepath.Join(paths.Secrets, "mattermost-bot"), []byte(w.token+"\n"), 0o600)
	os.WriteFile(paths.Config, []byte("[gateway]\nurl = \""+w.mm.URL+"\"\ntoken_secret = \"mattermost-bot\"\n"+
		"channels = [\""+w.channel+"\"]\nallow_users = [\""+w.alice.ID+"\"]\n"), 0o600)
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	logs := &syncbuf.Buffer{}
	cmd := Command()
	cmd.ErrWriter = logs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx, []string{"gatewayd", "--home", paths.Home}) }()
	poll.Until(t, "the command logs in", func() bool { return w.mm.Sockets() == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("gatewayd: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "gatewayd: logged in") || strings.Contains(out, w.token) {
		t.Errorf("log:\n%s", out)
	}

	os.WriteFile(paths.Config, []byte("[broker]\napproval_timeout = \"1m\"\n"), 0o600)
	err := Command().Run(context.Background(), []string{"gatewayd", "--home", paths.Home})
	if err == nil || !strings.Contains(err.Error(), "no [gateway] table") {
		t.Errorf("without [gateway]: %v", err)
	}
}

func TestBadTokenStopsGatewayd(t *testing.T) {
	w := newWorld(t)
	err := Main(t.Context(), Options{Paths: home(t), Gateway: w.gatewayConfig(), Token: "wrong-token"})
	if err == nil || !strings.Contains(err.Error(), "refused the bot token") || strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("got %v", err)
	}
}

func TestGatewaySocketRefusals(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	start(t, w, paths)
	path, _ := sock.PathOf(paths, "brokerd", "gatewayd")
	for _, c := range []struct {
		name string
		msg  wire.Message
		want string
	}{
		{"another kind", wire.ChatSend{Content: "hi"}, "kind chat_send is not accepted"},
		{"a bad id", request(t, "has space", "chat-1", time.Now().Add(time.Minute)), "approval id"},
	} {
		c0, err := sock.Dial(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c0.Call(t.Context(), c.msg, nil)
		c0.Close()
		if wire.CodeOf(err) != wire.BadMessage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want bad_message saying %q", c.name, err, c.want)
		}
	}
}

func TestGatewaySocketChecksThePeer(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	start(t, w, paths, func(o *Options) { o.AllowPeer = func(sock.Peer) bool { return false } })
	path, _ := sock.PathOf(paths, "brokerd", "gatewayd")
	c, err := sock.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(t.Context(), request(t, "a1", "chat-1", time.Now().Add(time.Minute)), nil)
	if err == nil || !strings.Contains(err.Error(), "does not accept your uid") {
		t.Errorf("got %v", err)
	}
}

func TestCodeCannotBeClosed(t *testing.T) {
	for _, s := range []string{"plain", "```", "a\n```\nb", "````` and ``", "`x`", "ends with `"} {
		block := codeBlock(s)
		fence := block[:strings.Index(block, "text\n")]
		inner := strings.TrimSuffix(strings.TrimPrefix(block, fence+"text\n"), "\n"+fence)
		if inner != strings.TrimSuffix(s, "\n") {
			t.Errorf("codeBlock(%q) changed the text: %q", s, block)
		}
		for _, line := range strings.Split(inner, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), fence) {
				t.Errorf("codeBlock(%q): the line %q closes the block", s, line)
			}
		}
		span := codeSpan(s)
		delim := span[:strings.IndexFunc(span, func(r rune) bool { return r != '`' })]
		if strings.Contains(s, delim) {
			t.Errorf("codeSpan(%q) = %q: the text holds its delimiter", s, span)
		}
	}
}

func TestSplitAndSessionNames(t *testing.T) {
	long := strings.Repeat("ab\n", 20000)
	parts := quotedPosts("head", long, "tail")
	var rejoined strings.Builder
	for i, p := range parts {
		if utf8.RuneCountInString(p) > maxPostRunes {
			t.Errorf("part %d has %d runes", i, utf8.RuneCountInString(p))
		}
		p = strings.TrimPrefix(p, "head\n\n")
		p = strings.TrimSuffix(p, "\n\ntail")
		inner, ok := strings.CutPrefix(p, "```text\n")
		if !ok || !strings.HasSuffix(inner, "\n```") {
			t.Fatalf("part %d is no block of its own: %.40q", i, p)
		}
		rejoined.WriteString(strings.TrimSuffix(inner, "```"))
	}
	if rejoined.String() != long || len(parts) != 4 || !strings.HasPrefix(parts[0], "head\n\n") || !strings.HasSuffix(parts[3], "\n\ntail") {
		t.Errorf("%d parts, rejoined equal: %v", len(parts), rejoined.String() == long)
	}
	s, err := sessionFor("Ab_cdefghijklmnopqrstuvwxyz")
	if err != nil || s.String() != "mm-abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("sessionFor: %v %v", s, err)
	}
	if root, ok := rootOfSession(s); !ok || root != "abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("rootOfSession: %q %v", root, ok)
	}
	other, _ := wire.ParseSessionID("chat-1")
	if _, ok := rootOfSession(other); ok {
		t.Error("a bxctl session was taken for a thread")
	}
}
