package policy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseHostSetRefuses(t *testing.T) {
	cases := map[string][]string{
		"empty":        nil,
		"a URL":        {"docs.python.org", "https://evil.example/"},
		"a number":     {"2130706433"},
		"mapped IPv6":  {"[::ffff:127.0.0.1]"},
		"empty string": {""},
	}
	for name, entries := range cases {
		if _, err := ParseHostSet(entries); err == nil {
			t.Errorf("%s: %q parsed", name, entries)
		}
	}
}

func TestHostSetAllowsURL(t *testing.T) {
	set, err := ParseHostSet([]string{"docs.python.org", "*.wikipedia.org", "127.0.0.1:8080", "[::1]:8443", "http://plain.example"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		url       string
		want      bool
		authority string
	}{
		{"https://DOCS.python.org./3/", true, "docs.python.org:443"},
		{"https://en.wikipedia.org/wiki/X", true, "en.wikipedia.org:443"},
		{"https://127.0.0.1:8080/", true, "127.0.0.1:8080"},
		{"https://[::1]:8443/", true, "[::1]:8443"},
		{"http://plain.example/", true, "plain.example:80"},
		{"https://127.0.0.1:8081/", false, ""},
		{"https://2130706433:8080/", false, ""},
		{"https://docs.python.org@127.0.0.1:8080/", false, ""},
		{"https://evil.example#@docs.python.org/", false, ""},
		{"https://[::ffff:127.0.0.1]:8080/", false, ""},
		{"http://docs.python.org/", false, ""},
	}
	for _, c := range cases {
		target, ok, why := set.AllowsURL(c.url)
		if ok != c.want || why == "" {
			t.Errorf("%q: %v (%s), want %v", c.url, ok, why, c.want)
			continue
		}
		if ok && target.Authority() != c.authority {
			t.Errorf("%q: authority %q, want %q", c.url, target.Authority(), c.authority)
		}
	}
}

func TestHostSetSaysWhyAParseFailed(t *testing.T) {
	set, err := ParseHostSet([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	target, ok, why := set.AllowsURL("https://u@a.example/")
	if ok || target != (URLTarget{}) || !strings.Contains(why, "userinfo") {
		t.Errorf("got %+v %v %q", target, ok, why)
	}
}

func TestZeroHostSetAllowsNothing(t *testing.T) {
	var set HostSet
	if _, ok, _ := set.AllowsURL("https://a.example/"); ok {
		t.Error("the zero HostSet allowed a URL")
	}
	if set.ListsIP(netip.MustParseAddr("127.0.0.1"), 443) {
		t.Error("the zero HostSet listed an IP")
	}
}

func TestHostSetListsIP(t *testing.T) {
	set, err := ParseHostSet([]string{"*", "127.0.0.1:8080", "http://10.0.0.1", "[fd00::1]", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		addr string
		port uint16
		want bool
	}{
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 443, false},
		{"127.0.0.2", 8080, false},
		{"::ffff:127.0.0.1", 8080, false},
		{"10.0.0.1", 80, true},
		{"10.0.0.1", 443, false},
		{"fd00::1", 443, true},
		{"fd00::2", 443, false},
		{"::1", 443, false},
	}
	for _, c := range cases {
		if got := set.ListsIP(netip.MustParseAddr(c.addr), c.port); got != c.want {
			t.Errorf("%s port %d: %v, want %v", c.addr, c.port, got, c.want)
		}
	}
}
