package egressd

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"boxmaker/policy"
)

// rawGet is a request line a hostile sandbox might write by hand.
func rawGet(url string) string {
	return "GET " + url + " HTTP/1.1\r\nHost: x\r\n\r\n"
}

// TestNumericHostsNeverMatch: the grant lists the loopback server's
// canonical address (and that works), but no other spelling of it does.
func TestNumericHostsNeverMatch(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, false, hello)
	port := up.port()
	hosts := []string{"http://*", "http://127.0.0.1:" + port}
	if resp, body := h.get(hosts, "http://127.0.0.1:"+port+"/"); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Fatalf("the canonical form: %d %q", resp.StatusCode, body)
	}
	for _, host := range []string{
		"2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "127.1", "127.0.1", "017700000001",
		"[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]", "127.0.0.1.",
	} {
		url := "http://" + host + ":" + port + "/"
		resp, _ := h.exchange(hosts, nil, rawGet(url))
		wantRefused(t, resp, url)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("the server saw %d requests, want only the canonical one", n)
	}
	if n := h.resolver.total(); n != 0 {
		t.Errorf("the resolver was asked %d times about numbers", n)
	}
}

// TestSpecialAddressesAreRefusedAtDialTime: names the grant allows, which
// resolve to special-purpose addresses, are refused before any connect.
func TestSpecialAddressesAreRefusedAtDialTime(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, hello)
	port := up.port()
	for i, addr := range []string{
		"127.0.0.1", "::1", "::ffff:127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1",
		"169.254.169.254", "100.100.100.200", "0.0.0.0", "::", "fc00::1", "fe80::1",
		"64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:a9fe:a9fe::", "2001::1", "::ffff:10.0.0.1",
		"224.0.0.1", "255.255.255.255", "192.0.2.1", "198.18.0.1", "2001:db8::1", "ff02::1",
	} {
		name := fmt.Sprintf("n%d.test", i)
		h.resolver.set(name, addr)
		resp, _ := h.exchange([]string{"*"}, nil, rawGet("https://"+name+":"+port+"/"))
		wantRefused(t, resp, name+" -> "+addr)
		if q := h.resolver.queries(name); q != 1 {
			t.Errorf("%s was resolved %d times, want once", name, q)
		}
	}
	if d := h.dialedAddrs(); len(d) != 0 || up.hits.Load() != 0 {
		t.Errorf("dialed %v, server hits %d; want nothing", d, up.hits.Load())
	}
	if !strings.Contains(h.logs.String(), "(169.254.169.254 port "+port+" is link-local)") {
		t.Errorf("the log does not name the refused address: %s", h.logs)
	}
}

// TestRebinding: a name answers a public address first and loopback later.
// egressd asks once per connection and connects to exactly what it checked;
// the public connect is faked in the dialer's Control, so nothing leaves
// the machine.
func TestRebinding(t *testing.T) {
	h := startEgressd(t, Options{})
	public := netip.MustParseAddr("93.184.215.14")
	h.resolver.set("rebind.test", public.String(), "127.0.0.1")
	hosts := []string{"rebind.test"}

	resp, _ := h.exchange(hosts, nil, rawGet("https://rebind.test/"))
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(bodyOf(t, resp), errFakeDial.Error()) {
		t.Fatalf("first call: %d, want the faked connect's 502", resp.StatusCode)
	}
	if q, d := h.resolver.queries("rebind.test"), h.dialedAddrs(); q != 1 || len(d) != 1 || d[0] != netip.AddrPortFrom(public, 443) {
		t.Fatalf("asked %d times and dialed %v; want once and %v:443", q, d, public)
	}

	resp, _ = h.exchange(hosts, nil, rawGet("https://rebind.test/"))
	wantRefused(t, resp, "second answer, loopback")
	if q, d := h.resolver.queries("rebind.test"), h.dialedAddrs(); q != 2 || len(d) != 1 {
		t.Fatalf("asked %d times and dialed %v after the loopback answer", q, d)
	}
}

// TestOneBadAddressSpoilsTheName: every address of a name is checked, not
// only the one the dialer would try first.
func TestOneBadAddressSpoilsTheName(t *testing.T) {
	h := startEgressd(t, Options{})
	h.resolver.set("mixed.test", "93.184.215.14,10.0.0.1")
	resp, _ := h.exchange([]string{"mixed.test"}, nil, rawGet("https://mixed.test/"))
	wantRefused(t, resp, "public and private")
	if d := h.dialedAddrs(); len(d) != 0 {
		t.Errorf("dialed %v", d)
	}
}

// TestListedIPLiteral: the grant lists 127.0.0.1 with one port; that
// address and port are reachable, by literal or by a name, and nothing else
// on loopback is.
func TestListedIPLiteral(t *testing.T) {
	h := startEgressd(t, Options{})
	listed, other := newUpstream(t, true, hello), newUpstream(t, true, hello)
	h.resolver.set("example.com", "127.0.0.1")
	hosts := []string{listed.hostPort(), "example.com:" + listed.port(), "example.com:" + other.port(), "[::1]:" + other.port()}

	for _, url := range []string{listed.URL + "/", "https://example.com:" + listed.port() + "/"} {
		if resp, body := h.get(hosts, url); resp.StatusCode != http.StatusOK || body != "hello" {
			t.Errorf("%s: %d %q", url, resp.StatusCode, body)
		}
	}
	for _, url := range []string{other.URL + "/", "https://example.com:" + other.port() + "/", "https://127.0.0.2:" + listed.port() + "/"} {
		resp, _ := h.exchange(hosts, nil, rawGet(url))
		wantRefused(t, resp, url)
	}
	if other.hits.Load() != 0 {
		t.Errorf("the unlisted port was reached")
	}
}

// TestNameIsUsedForTLS: egressd connects to the checked address but
// verifies the certificate against the URL's name, which it normalises
// (case, trailing dot) before anything else sees it.
func TestNameIsUsedForTLS(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Host, r.TLS.ServerName)
	})
	port := up.port()
	h.resolver.set("example.com", "127.0.0.1")
	h.resolver.set("other.test", "127.0.0.1")
	hosts := []string{"example.com:" + port, "other.test:" + port, up.hostPort()}

	resp, body := h.get(hosts, "https://EXAMPLE.Com.:"+port+"/")
	if want := "example.com:" + port + " example.com"; resp.StatusCode != http.StatusOK || body != want {
		t.Errorf("upper case and trailing dot: %d %q, want %q", resp.StatusCode, body, want)
	}
	if q := h.resolver.queries("example.com"); q != 1 {
		t.Errorf("example.com resolved %d times", q)
	}
	resp, body = h.get(hosts, "https://other.test:"+port+"/")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "certificate") {
		t.Errorf("a name the certificate lacks: %d %q", resp.StatusCode, body)
	}
}

// TestUserinfoAndFragmentTricks: the host is what policy reads, and a URL
// with userinfo never matches.
func TestUserinfoAndFragmentTricks(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, hello)
	port := up.port()
	h.resolver.set("allowed.test", "127.0.0.1")
	h.resolver.set("evil.test", "93.184.215.14")
	hosts := []string{"allowed.test:" + port, up.hostPort()}
	for _, url := range []string{
		"https://allowed.test:" + port + "@evil.test/",
		"https://allowed.test@evil.test:" + port + "/",
		"https://evil.test#@allowed.test:" + port + "/",
		"https://evil.test:" + port + "#@allowed.test:" + port + "/",
		"https://evil.test\\@allowed.test:" + port + "/",
		"https://u:p@allowed.test:" + port + "/",
	} {
		resp, back := h.exchange(hosts, nil, rawGet(url))
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s: allowed: %q", url, back)
		}
	}
	if h.resolver.queries("evil.test") != 0 || h.resolver.queries("allowed.test") != 0 || up.hits.Load() != 0 {
		t.Errorf("a trick got as far as the resolver or the server")
	}
}

// redirector answers each path with a redirect somewhere a test names;
// port is its own, known once it listens.
func redirector(denied string, port *string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		targets := map[string]string{
			"/to-unlisted": denied + "/",
			"/to-metadata": "https://meta.test:" + *port + "/latest",
			"/to-http":     "http://example.com:" + *port + "/",
			"/to-userinfo": "https://example.com:" + *port + "@evil.test/",
			"/loop":        "/loop",
			"/hop3":        "https://example.com:" + *port + "/hop2",
			"/hop2":        "/hop1",
			"/hop1":        "https://EXAMPLE.com.:" + *port + "/done",
		}
		if to, ok := targets[r.URL.Path]; ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, r.URL.Path)
	}
}

// TestRedirects: every hop is checked against the hosts and the address
// rules, and the number of hops is capped.
func TestRedirects(t *testing.T) {
	h := startEgressd(t, Options{})
	denied := newUpstream(t, true, hello)
	var port string
	up := newUpstream(t, true, redirector(denied.URL, &port))
	port = up.port()
	h.resolver.set("example.com", "127.0.0.1")
	h.resolver.set("meta.test", "169.254.169.254")
	hosts := []string{up.hostPort(), "example.com:" + port, "*.test:" + port}

	for _, path := range []string{"/to-unlisted", "/to-metadata", "/to-http", "/to-userinfo", "/loop"} {
		before := up.hits.Load()
		resp, _ := h.exchange(hosts, nil, rawGet(up.URL+path))
		wantRefused(t, resp, path)
		if path == "/loop" && up.hits.Load()-before != 4 {
			t.Errorf("the loop was followed %d times, want the request and 3 redirects", up.hits.Load()-before)
		}
	}
	for _, d := range h.dialedAddrs() {
		if d != netip.MustParseAddrPort(up.hostPort()) {
			t.Errorf("dialed %v", d)
		}
	}
	if denied.hits.Load() != 0 || !strings.Contains(h.logs.String(), "more than 3 redirects") {
		t.Errorf("the unlisted server was reached, or the log lacks the cap: %s", h.logs)
	}
	resp, body := h.get(hosts, up.URL+"/hop3")
	if resp.StatusCode != http.StatusOK || body != "/done" || !strings.Contains(h.logs.String(), "3 redirects") {
		t.Errorf("three hops: %d %q", resp.StatusCode, body)
	}
}

// TestMappedAnswersAreDialedUnmapped: resolvers often answer IPv4 as
// ::ffff:a.b.c.d; egressd judges and dials the IPv4 address itself.
func TestMappedAnswersAreDialedUnmapped(t *testing.T) {
	h := startEgressd(t, Options{})
	h.resolver.set("mapped.test", "::ffff:93.184.215.14")
	resp, _ := h.exchange([]string{"mapped.test"}, nil, rawGet("https://mapped.test/"))
	want := netip.MustParseAddrPort("93.184.215.14:443")
	if d := h.dialedAddrs(); resp.StatusCode != http.StatusBadGateway || len(d) != 1 || d[0] != want {
		t.Fatalf("got %d, dialed %v; want the faked connect to %v", resp.StatusCode, d, want)
	}
}

// TestTransportSettings: no proxy from the environment (the dialer would see
// only the proxy's address), HTTP/1.1 only, no connection kept for later.
func TestTransportSettings(t *testing.T) {
	s, err := newServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := s.transport(s.newGuard(policy.HostSet{}))
	if tr.Proxy != nil || tr.Protocols.HTTP2() || tr.Protocols.UnencryptedHTTP2() || !tr.Protocols.HTTP1() ||
		!tr.DisableKeepAlives || tr.ForceAttemptHTTP2 || tr.DialTLSContext != nil || tr.DialContext == nil {
		t.Errorf("transport %+v", tr)
	}
}
