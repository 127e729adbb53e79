package config

import (
	"strings"
	"testing"
)

// A remote server is url and an optional secret: https to a name or an IP
// literal, or http to an IP literal only.
func TestMCPRemoteValues(t *testing.T) {
	cfg, err := Load(writeConfig(t, "[mcp.tracker]\nurl = \"https://mcp.example.com/mcp\"\nsecret = \"tracker-token\"\n"+
		"[mcp.local]\nurl = \"http://127.0.0.1:8931/mcp\"\n[mcp.six]\nurl = \"http://[::1]:8931/a/b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := cfg.MCP.Servers["tracker"]
	if !tr.Remote() || tr.URL != "https://mcp.example.com/mcp" || tr.Secret != "tracker-token" || tr.MemoryMB != DefaultMCPMemoryMB {
		t.Errorf("[mcp.tracker]: %+v", tr)
	}
	for _, url := range []string{"https://mcp.example.com", "https://mcp.example.com/", "http://127.0.0.1:8931"} {
		if err := CheckMCPURL(url); err != nil {
			t.Errorf("%s (the path is /): %v", url, err)
		}
	}
	if l := cfg.MCP.Servers["local"]; !l.Remote() || l.Secret != "" {
		t.Errorf("[mcp.local]: %+v", l)
	}
}

func TestMCPRemoteBadValues(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"url = \"http://localhost:8931/mcp\"", "plain http is allowed only to an IP literal"},
		{"url = \"http://mcp.example.com/mcp\"", "plain http is allowed only to an IP literal"},
		{"url = \"ftp://mcp.example.com/mcp\"", "the scheme must be https"},
		{"url = \"https://user:pw@mcp.example.com/mcp\"", "userinfo is not allowed"},
		{"url = \"https://mcp.example.com/mcp?key=1\"", "no query or fragment"},
		{"url = \"https://mcp.example.com/mcp#x\"", "no query or fragment"},
		{"url = \"https://mcp.example.com:0/mcp\"", "bad port"},
		{"url = \"https://mcp.example.com/a b\"", "url"},
		{"url = \"http://[fe80::1%25eth0]:80/mcp\"", "url"},
		{"url = \"https://mcp.example.com/mcp\"\ncommand = [\"/usr/bin/node\"]", "url and command"},
		{"url = \"https://mcp.example.com/mcp\"\nro = [\"/srv\"]", "ro, rw and env are a local server's"},
		{"url = \"https://mcp.example.com/mcp\"\nsecret = \"../token\"", "must be a file name in the secrets directory"},
		{"command = [\"/usr/bin/node\"]\nsecret = \"token\"", "secret goes with url"},
	} {
		text := "[mcp.remote]\n" + c.text + "\n"
		_, err := Load(writeConfig(t, text))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "[mcp.remote]") {
			t.Errorf("%q: got %v, want an error containing %q", c.text, err, c.want)
		}
	}
}
