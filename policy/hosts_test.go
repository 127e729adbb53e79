package policy

import (
	"fmt"
	"strings"
	"testing"
)

func TestHostEntriesAccepted(t *testing.T) {
	cases := []struct {
		entry  string
		scheme string
		form   hostForm
		name   string
		port   uint16
	}{
		{"docs.python.org", "https", exactName, "docs.python.org", 443},
		{"DOCS.Python.ORG", "https", exactName, "docs.python.org", 443},
		{"docs.python.org.", "https", exactName, "docs.python.org", 443},
		{"docs.python.org:8443", "https", exactName, "docs.python.org", 8443},
		{"*.wikipedia.org", "https", subdomains, "wikipedia.org", 443},
		{"*.wikipedia.org:444", "https", subdomains, "wikipedia.org", 444},
		{"*", "https", anyName, "", 0},
		{"*:8443", "https", anyName, "", 8443},
		{"http://example.com", "http", exactName, "example.com", 80},
		{"http://example.com:8080", "http", exactName, "example.com", 8080},
		{"http://*", "http", anyName, "", 0},
		{"bücher.example", "https", exactName, "xn--bcher-kva.example", 443},
		{"xn--bcher-kva.example", "https", exactName, "xn--bcher-kva.example", 443},
		{"127.0.0.1", "https", ipLiteral, "", 443},
		{"127.0.0.1:8080", "https", ipLiteral, "", 8080},
		{"[::1]", "https", ipLiteral, "", 443},
		{"[2001:db8::1]:8443", "https", ipLiteral, "", 8443},
		{"localhost", "https", exactName, "localhost", 443},
	}
	for _, c := range cases {
		e, err := parseHostEntry(c.entry)
		if err != nil {
			t.Errorf("%q: %v", c.entry, err)
			continue
		}
		if e.scheme != c.scheme || e.form != c.form || e.name != c.name || e.port != c.port {
			t.Errorf("%q: got %s %d %q %d, want %s %d %q %d", c.entry, e.scheme, e.form, e.name, e.port, c.scheme, c.form, c.name, c.port)
		}
	}
}

func TestHostEntriesRefused(t *testing.T) {
	cases := map[string]string{
		"https://a.example":      "looks like a URL",
		"https://a.example/path": "looks like a URL",
		"ftp://a.example":        "looks like a URL",
		"HTTP://a.example":       "looks like a URL",
		"a.example/":             "looks like a URL",
		"a.example?x":            "looks like a URL",
		"user@a.example":         "looks like a URL",
		"a%2eexample":            "looks like a URL",
		"a.example\\x":           "looks like a URL",
		"":                       "empty",
		"a example":              "space",
		"a.example:":             "empty port",
		"a.example:0":            "port",
		"a.example:65536":        "port",
		"a.example:0443":         "port",
		"a.example:+443":         "port",
		"a.example:http":         "port",
		"::1":                    "brackets",
		"[::1":                   "unclosed",
		"[::1]x":                 "not a :port",
		"[127.0.0.1]":            "not an IPv6 address",
		"[::ffff:127.0.0.1]":     "IPv4-mapped",
		"[fe80::1%eth0]":         "looks like a URL",
		"*.":                     "not a host name",
		"**.example":             "not a host name",
		"a.*.example":            "not a host name",
		"*a.example":             "not a host name",
		"*.*.example":            "not a host name",
		"a..example":             "not a valid host name",
		".a.example":             "not a valid host name",
		"a.example..":            "not a valid host name",
		"-a.example":             "not a valid host name",
		"a_b.example":            "not a valid host name",
		"2130706433":             "is a number",
		"0x7f.1":                 "is a number",
		"127.1":                  "is a number",
		"127.0.0.01":             "is a number",
		"*.127.0.0.1":            "is a number",
		"example.0x":             "is a number",
	}
	for entry, want := range cases {
		_, err := parseHostEntry(entry)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), hostEntryShape) {
			t.Errorf("%q: error %v, want %q and the shape of an entry", entry, err, want)
		}
	}
}

// hostCase is a URL against a list of entries.
type hostCase struct {
	name    string
	entries []string
	url     string
	want    bool
}

func TestHostMatching(t *testing.T) {
	cases := []hostCase{
		{"exact", []string{"docs.python.org"}, "https://docs.python.org/3/", true},
		{"case-insensitive", []string{"docs.python.org"}, "https://DOCS.Python.org/", true},
		{"scheme case-insensitive", []string{"docs.python.org"}, "HTTPS://docs.python.org/", true},
		{"explicit default port", []string{"docs.python.org"}, "https://docs.python.org:443/", true},
		{"other port", []string{"docs.python.org"}, "https://docs.python.org:8443/", false},
		{"entry port", []string{"docs.python.org:8443"}, "https://docs.python.org:8443/", true},
		{"entry port, default in URL", []string{"docs.python.org:8443"}, "https://docs.python.org/", false},
		{"star any port", []string{"*"}, "https://a.example:8443/", true},
		{"star with port", []string{"*:8443"}, "https://a.example/", false},
		{"trailing dot in URL", []string{"docs.python.org"}, "https://docs.python.org./", true},
		{"trailing dot in entry", []string{"docs.python.org."}, "https://docs.python.org/", true},
		{"two trailing dots", []string{"*"}, "https://docs.python.org../", false},
		{"subdomain", []string{"*.wikipedia.org"}, "https://en.wikipedia.org/", true},
		{"deep subdomain", []string{"*.wikipedia.org"}, "https://a.b.wikipedia.org/", true},
		{"wildcard not apex", []string{"*.wikipedia.org"}, "https://wikipedia.org/", false},
		{"suffix trick", []string{"docs.python.org"}, "https://docs.python.org.evil.example/", false},
		{"label suffix trick", []string{"*.wikipedia.org"}, "https://evilwikipedia.org/", false},
		{"http needs an http entry", []string{"docs.python.org"}, "http://docs.python.org/", false},
		{"http entry", []string{"http://docs.python.org"}, "http://docs.python.org/", true},
		{"http entry default port", []string{"http://docs.python.org"}, "http://docs.python.org:80/", true},
		{"http entry is not https", []string{"http://docs.python.org"}, "https://docs.python.org/", false},
		{"http star", []string{"http://*"}, "http://a.example:8080/", true},
		{"other scheme", []string{"*"}, "ftp://a.example/", false},
		{"no slashes", []string{"*"}, "https:a.example/", false},
		{"three slashes", []string{"*"}, "https:///a.example/", false},
		{"userinfo", []string{"*"}, "https://docs.python.org@evil.example/", false},
		{"empty userinfo", []string{"*"}, "https://@a.example/", false},
		{"userinfo with password", []string{"evil.example"}, "https://u:p@evil.example/", false},
		{"fragment hides nothing", []string{"docs.python.org"}, "https://docs.python.org#@evil.example", true},
		{"fragment before host trick", []string{"docs.python.org"}, "https://evil.example#.docs.python.org/", false},
		{"query", []string{"docs.python.org"}, "https://docs.python.org?q=1", true},
		{"backslash", []string{"*"}, "https://evil.example\\@docs.python.org/", false},
		{"backslash as slash", []string{"docs.python.org"}, "https://docs.python.org\\x", false},
		{"space", []string{"*"}, "https://a.example/ x", false},
		{"tab in host", []string{"*"}, "https://a.exa\tmple/", false},
		{"empty host", []string{"*"}, "https:///", false},
		{"empty host with port", []string{"*"}, "https://:443/", false},
		{"empty port", []string{"*"}, "https://a.example:/", false},
		{"leading zero port", []string{"*"}, "https://a.example:0443/", false},
		{"huge port", []string{"*"}, "https://a.example:99999/", false},
		{"percent host", []string{"*"}, "https://docs%2epython.org/", false},
		{"percent dot to suffix", []string{"*.python.org"}, "https://evil.example%2f.python.org/", false},
		{"percent unicode host", []string{"*"}, "https://b%C3%BCcher.example/", false},
		{"percent in path is fine", []string{"docs.python.org"}, "https://docs.python.org/a%2fb", true},
		{"IDN unicode URL, punycode entry", []string{"xn--bcher-kva.example"}, "https://bücher.example/", true},
		{"IDN punycode URL, unicode entry", []string{"bücher.example"}, "https://xn--bcher-kva.example/", true},
		{"IDN uppercase", []string{"bücher.example"}, "https://BÜCHER.example/", true},
		{"IDN is not its ASCII lookalike", []string{"bucher.example"}, "https://bücher.example/", false},
		{"eszett is not ss", []string{"fass.example"}, "https://faß.example/", false},
		{"fullwidth dots", []string{"docs.python.org"}, "https://docs。python。org/", true},
		{"star does not match an IPv4 literal", []string{"*"}, "https://127.0.0.1/", false},
		{"IPv4 entry", []string{"127.0.0.1"}, "https://127.0.0.1/", true},
		{"IPv4 entry other port", []string{"127.0.0.1"}, "https://127.0.0.1:8443/", false},
		{"IPv4 is not a name entry", []string{"localhost"}, "https://127.0.0.1/", false},
		{"star does not match IPv6", []string{"*"}, "https://[::1]/", false},
		{"IPv6 entry", []string{"[::1]"}, "https://[::1]/", true},
		{"IPv6 long form", []string{"[::1]"}, "https://[0:0:0:0:0:0:0:1]/", true},
		{"IPv6 port", []string{"[::1]:8443"}, "https://[::1]:8443/", true},
		{"IPv6 is not IPv4 loopback", []string{"127.0.0.1"}, "https://[::1]/", false},
		{"mapped IPv6 is not the IPv4 entry", []string{"127.0.0.1"}, "https://[::ffff:127.0.0.1]/", false},
		{"mapped IPv6 under star", []string{"*"}, "https://[::ffff:127.0.0.1]/", false},
		{"IPv6 zone", []string{"[fe80::1]"}, "https://[fe80::1%25eth0]/", false},
		{"decimal IPv4", []string{"*"}, "https://2130706433/", false},
		{"decimal IPv4 vs entry", []string{"127.0.0.1"}, "https://2130706433/", false},
		{"hex IPv4", []string{"*"}, "https://0x7f.1/", false},
		{"hex IPv4 vs entry", []string{"127.0.0.1"}, "https://0x7f.1/", false},
		{"octal IPv4", []string{"*"}, "https://0177.0.0.1/", false},
		{"short IPv4", []string{"*"}, "https://127.1/", false},
		{"IPv4 with trailing dot", []string{"*", "127.0.0.1"}, "https://127.0.0.1./", false},
		{"number under a wildcard", []string{"*.example"}, "https://1.example/", true},
		{"underscore name", []string{"*"}, "https://a_b.example/", false},
		{"empty label", []string{"*"}, "https://a..example/", false},
		{"no URL", []string{"*"}, "docs.python.org", false},
		{"empty URL", []string{"*"}, "", false},
		{"NUL", []string{"*"}, "https://a.example\x00.evil/", false},
		{"invalid UTF-8 host", []string{"*"}, "https://0\xff/", false},
		{"replacement character host", []string{"*"}, "https://a\ufffd.example/", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustHosts(t, c.entries)
			got, why := m.match(newSubject(c.url))
			if got != c.want {
				t.Errorf("%q against %v: %v (%s), want %v", c.url, c.entries, got, why, c.want)
			}
		})
	}
}

func mustHosts(t *testing.T, entries []string) hostsMatcher {
	t.Helper()
	var m hostsMatcher
	for _, s := range entries {
		e, err := parseHostEntry(s)
		if err != nil {
			t.Fatal(err)
		}
		m = append(m, e)
	}
	return m
}

func TestParseURLTargetSaysWhy(t *testing.T) {
	cases := map[string]string{
		"https://u@a.example/":                        "userinfo",
		"https://a%2eexample/":                        "percent-encoded",
		"https://a.example\\b/":                       "backslash",
		"https:///x":                                  "no host",
		"file:///etc/passwd":                          "https://",
		"https://2130706433/":                         "is a number",
		"https://[::ffff:1.2.3.4]/":                   "IPv4-mapped",
		"https://a.example:/":                         "port",
		"https://" + strings.Repeat("a", 1<<20) + "/": "not a valid host name",
	}
	for url, want := range cases {
		_, err := ParseURLTarget(url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: error %v, want %q", url, err, want)
		}
		if err != nil && len(err.Error()) > 600 {
			t.Errorf("%.60q: error is %d bytes long", url, len(err.Error()))
		}
	}
	got, err := ParseURLTarget("https://BÜCHER.example.:8443/x?y#z")
	if err != nil || got.Scheme != "https" || got.Host != "xn--bcher-kva.example" || got.Port != 8443 || got.Addr.IsValid() {
		t.Errorf("target %+v, %v", got, err)
	}
	got, err = ParseURLTarget("http://[::1]/")
	if err != nil || got.Host != "::1" || got.Port != 80 || !got.Addr.Is6() {
		t.Errorf("target %+v, %v", got, err)
	}
}

// FuzzParseURLTarget checks that a URL policy accepts leads to a canonical
// target: an ASCII name that is not a number, or an IP address, and that
// writing the target back as a URL reads the same.
func FuzzParseURLTarget(f *testing.F) {
	for _, s := range []string{"https://docs.python.org/3/", "http://[::1]:8080/x", "https://bücher.example./",
		"https://a@b/", "https://0x7f.1/", "https://a.example:443#x", "HTTPS://A.EXAMPLE?q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		target, err := ParseURLTarget(raw)
		if err != nil {
			return
		}
		if !target.Addr.IsValid() && (target.Host != strings.ToLower(target.Host) || endsInNumber(target.Host) || strings.HasSuffix(target.Host, ".")) {
			t.Fatalf("%q: host %q is not canonical", raw, target.Host)
		}
		back := fmt.Sprintf("%s://%s:%d/", target.Scheme, hostText(target), target.Port)
		again, err := ParseURLTarget(back)
		if err != nil || again != target {
			t.Fatalf("%q -> %+v; %q -> %+v, %v", raw, target, back, again, err)
		}
	})
}
