package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	userA    = "aaaaaaaaaaaaaaaaaaaaaaaaaa"
	channelB = "bbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestLoadGatewayAbsent(t *testing.T) {
	if g, err := LoadGateway(filepath.Join(t.TempDir(), "absent.toml")); g != nil || err != nil {
		t.Errorf("missing file: %+v, %v; want nil, nil", g, err)
	}
	if g, err := LoadGateway(writeConfig(t, "[broker]\napproval_timeout = \"1m\"\n")); g != nil || err != nil {
		t.Errorf("no [gateway]: %+v, %v; want nil, nil", g, err)
	}
}

func TestLoadGatewayDefaultsAndValues(t *testing.T) {
	path := writeConfig(t, "[broker]\napproval_timeout = \"1m\"\n[gateway]\nurl = \"https://mm.example/\"\n"+
		"token_secret = \"mattermost-bot\"\nchannels = [\""+channelB+"\"]\nallow_users = [\""+userA+"\"]\n")
	g, err := LoadGateway(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Gateway{URL: "https://mm.example", TokenSecret: "mattermost-bot", Channels: []string{channelB},
		AllowUsers: []string{userA}, ApproveEmoji: "+1", DenyEmoji: "-1", EditInterval: Dur(time.Second)}
	if g.URL != want.URL || g.TokenSecret != want.TokenSecret || !slices.Equal(g.Channels, want.Channels) ||
		!slices.Equal(g.AllowUsers, want.AllowUsers) || g.ApproveEmoji != want.ApproveEmoji ||
		g.DenyEmoji != want.DenyEmoji || g.EditInterval != want.EditInterval {
		t.Errorf("got %+v, want %+v", *g, want)
	}
	g, err = LoadGateway(writeConfig(t, "[gateway]\nurl = \"http://127.0.0.1:8065\"\n"+
		"allow_users = [\""+userA+"\"]\napprove_emoji = \"white_check_mark\"\ndeny_emoji = \"x\"\nedit_interval = \"2s\"\n"))
	if err != nil || g.TokenSecret != "mattermost-bot" || g.ApproveEmoji != "white_check_mark" || g.DenyEmoji != "x" || g.EditInterval.D() != 2*time.Second {
		t.Errorf("got %+v, %v", g, err)
	}
}

func TestLoadGatewayErrors(t *testing.T) {
	base := "[gateway]\ntoken_secret = \"t\"\nallow_users = [\"" + userA + "\"]\n"
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", base + "url = \"https://mm.example\"\nchanels = []\n", "line 5: unknown key gateway.chanels"},
		{"syntax", "[gateway\n", "line 1"},
		{"no url", base, `gateway.url ""`},
		{"plain http", base + "url = \"http://mm.example\"\n", "http:// is allowed only for a loopback host"},
		{"not a url", base + "url = \"mm.example\"\n", "must be the server's address"},
		{"userinfo", base + "url = \"https://u:p@mm.example\"\n", "must be the server's address"},
		{"bad scheme", base + "url = \"ftp://mm.example\"\n", "must start with https://"},
		{"secret path", "[gateway]\nurl = \"https://mm.example\"\ntoken_secret = \"../token\"\nallow_users = [\"" + userA + "\"]\n", "gateway.token_secret"},
		{"no users", "[gateway]\nurl = \"https://mm.example\"\ntoken_secret = \"t\"\n", "gateway.allow_users must list at least one"},
		{"bad user", "[gateway]\nurl = \"https://mm.example\"\ntoken_secret = \"t\"\nallow_users = [\"alice\"]\n", `gateway.allow_users: "alice" is not a Mattermost id`},
		{"bad channel", base + "url = \"https://mm.example\"\nchannels = [\"town-square\"]\n", "gateway.channels"},
		{"bad emoji", base + "url = \"https://mm.example\"\napprove_emoji = \":+1:\"\n", "gateway.approve_emoji"},
		{"same emoji", base + "url = \"https://mm.example\"\ndeny_emoji = \"+1\"\n", "must differ"},
		{"fast edits", base + "url = \"https://mm.example\"\nedit_interval = \"10ms\"\n", "gateway.edit_interval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, c.text)
			_, err := LoadGateway(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v; want an error naming the file and saying %q", err, c.want)
			}
		})
	}
}
