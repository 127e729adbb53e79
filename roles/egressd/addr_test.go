package egressd

import (
	"net/netip"
	"strings"
	"testing"
)

func TestSpecialKind(t *testing.T) {
	public := []string{"8.8.8.8", "1.1.1.1", "93.184.215.14", "::ffff:8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001::1"}
	for _, s := range public {
		if why := specialKind(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s: %s, want public", s, why)
		}
	}
	special := []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.255.255.254",
		"169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.1", "192.0.2.1", "192.88.99.1",
		"192.168.0.1", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"::ffff:0:7f00:1", "64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::1", "100::1",
		"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1", "2002:7f00:1::1",
		"2002:808:808::1", "3fff::1", "5f00::1", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1",
		"ff02::1", "fe80::1%eth0",
	}
	for _, s := range special {
		if why := specialKind(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s: public, want special", s)
		}
	}
	if specialKind(netip.Addr{}) == "" {
		t.Error("the zero Addr is public")
	}
}

func TestSecretRedaction(t *testing.T) {
	s := newSecret(ptr("Bearer abcdef123"))
	if got := s.redact("x Bearer abcdef123 y abcdef123"); got != "x [redacted] y [redacted]" {
		t.Errorf("redact: %q", got)
	}
	// A cut body loses its last line's last 15 bytes (the longest
	// needle's length less one), whatever they are.
	cases := map[string]string{
		"ok abcdef123 ok, and more words": "ok [redacted] ok,",
		"whole line\ntail abcde":          "whole line\n",
		"a longer line then Bearer abc":   "a longer line ",
		"nothing":                         "",
	}
	for in, want := range cases {
		if got := string(s.redactBody([]byte(in), true)); got != want {
			t.Errorf("%q cut: %q, want %q", in, got, want)
		}
	}
	// No oracle: a cut body whose tail begins the secret comes back as
	// long as one whose tail does not (a sandbox could have the server
	// echo its guesses).
	for _, guess := range []string{"abcde", "Bearer a", "abc"} {
		right := "quoted back: " + strings.Repeat("x", 20) + guess
		wrong := "quoted back: " + strings.Repeat("x", 20) + strings.Repeat("z", len(guess))
		if r, w := s.redactBody([]byte(right), true), s.redactBody([]byte(wrong), true); len(r) != len(w) {
			t.Errorf("guess %q: a right guess leaves %d bytes, a wrong one %d", guess, len(r), len(w))
		}
	}
	if got := string(s.redactBody([]byte("tail abcde"), false)); got != "tail abcde" {
		t.Errorf("an uncut body lost its tail: %q", got)
	}
	if newSecret(nil).isSet() || newSecret(nil).redact("x") != "x" {
		t.Error("no secret redacts something")
	}
}

func ptr(s string) *string { return &s }
