package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// URLTarget is where an http_fetch URL leads, read the one way policy reads
// it. The fetcher dials this, not its own parse of the URL, so that what was
// checked is what is reached.
type URLTarget struct {
	Scheme string     // "https" or "http"
	Host   string     // the ASCII name, lowercase, without a trailing dot; or the IP address
	Addr   netip.Addr // valid when the host is an IP literal
	Port   uint16     // the port written, or the scheme's default
}

// ParseURLTarget reads an http_fetch URL. Anything another URL parser might
// read differently is an error, and an error matches no grant: spaces,
// control characters and backslashes anywhere; userinfo; percent-escapes,
// an empty host or an empty port in the authority; hosts that are numbers
// in a form other than a.b.c.d; IPv6 zones and IPv4-mapped IPv6 addresses.
func ParseURLTarget(raw string) (URLTarget, error) {
	if err := refuseAmbiguousBytes(raw); err != nil {
		return URLTarget{}, err
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	scheme = strings.ToLower(scheme)
	if !ok || scheme != "https" && scheme != "http" {
		return URLTarget{}, errors.New("the URL must start with https:// (or http://)")
	}
	authority := rest[:authorityEnd(rest)]
	host, port, err := splitAuthority(authority)
	if err != nil {
		return URLTarget{}, err
	}
	target := URLTarget{Scheme: scheme}
	if err := target.setHost(host); err != nil {
		return URLTarget{}, err
	}
	if target.Port, err = urlPort(port, scheme); err != nil {
		return URLTarget{}, err
	}
	if err := agreeWithNetURL(raw, scheme, host, port); err != nil {
		return URLTarget{}, err
	}
	return target, nil
}

func refuseAmbiguousBytes(raw string) error {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return fmt.Errorf("the URL holds %q at byte %d; spaces, control characters and backslashes are not allowed", c, i)
		}
	}
	return nil
}

// authorityEnd finds where the authority stops: the first /, ? or #, as both
// RFC 3986 and the WHATWG standard have it once backslashes are refused.
func authorityEnd(rest string) int {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return i
	}
	return len(rest)
}

// splitAuthority returns the host (brackets kept) and the port text.
func splitAuthority(authority string) (host, port string, err error) {
	switch {
	case authority == "":
		return "", "", errors.New("the URL has no host")
	case strings.Contains(authority, "@"):
		return "", "", errors.New("the URL has userinfo (an @ before the host); such a URL never matches")
	case strings.Contains(authority, "%"):
		return "", "", errors.New("the URL's host is percent-encoded; such a URL never matches")
	}
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", "", errors.New("the URL's host has an unclosed [")
		}
		host, rest := authority[:end+1], authority[end+1:]
		port, ok := strings.CutPrefix(rest, ":")
		if rest != "" && (!ok || port == "") {
			return "", "", fmt.Errorf("%s after the host is not a :port", short(rest))
		}
		return host, port, nil
	}
	host, port, hasPort := strings.Cut(authority, ":")
	if hasPort && (port == "" || strings.Contains(port, ":")) {
		return "", "", fmt.Errorf("the URL's port %s is not a number", short(port))
	}
	return host, port, nil
}

func (t *URLTarget) setHost(host string) error {
	if inner, ok := strings.CutPrefix(host, "["); ok {
		addr, err := parseIPv6(strings.TrimSuffix(inner, "]"))
		if err != nil {
			return err
		}
		t.Addr, t.Host = addr, addr.String()
		return nil
	}
	if host == "" {
		return errors.New("the URL has no host")
	}
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is4() {
		t.Addr, t.Host = addr, addr.String()
		return nil
	}
	name, err := asciiName(host)
	if err != nil {
		return err
	}
	t.Host = name
	return nil
}

func urlPort(port, scheme string) (uint16, error) {
	if port == "" {
		return defaultPort(scheme), nil
	}
	return parsePort(port)
}

// agreeWithNetURL refuses a URL that Go's own parser, which the fetcher's
// HTTP client uses, splits differently.
func agreeWithNetURL(raw, scheme, host, port string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("net/url cannot parse the URL: %v", err)
	}
	if strings.ToLower(u.Scheme) != scheme || u.Opaque != "" || u.User != nil || u.Host != host+portSuffix(port) {
		return errors.New("parsers disagree about this URL's host; it never matches")
	}
	return nil
}

func portSuffix(port string) string {
	if port == "" {
		return ""
	}
	return ":" + port
}

// covers reports whether entry e lets a fetch reach t.
func (e hostEntry) covers(t URLTarget) bool {
	if e.scheme != t.Scheme || e.port != 0 && e.port != t.Port {
		return false
	}
	isIP := t.Addr.IsValid()
	switch e.form {
	case ipLiteral:
		return isIP && e.addr == t.Addr
	case anyName:
		return !isIP
	case exactName:
		return !isIP && t.Host == e.name
	case subdomains:
		return !isIP && strings.HasSuffix(t.Host, "."+e.name)
	}
	return false
}

// hostsMatcher matches http_fetch URLs against a grant's hosts.
type hostsMatcher []hostEntry

func (m hostsMatcher) match(s *subject) (bool, string) {
	t, err := s.target()
	if err != nil {
		return false, err.Error()
	}
	where := t.Scheme + "://" + hostText(t) + ":" + strconv.Itoa(int(t.Port))
	for _, e := range m {
		if e.covers(t) {
			return true, fmt.Sprintf("%s is covered by hosts entry %q", where, e.raw)
		}
	}
	return false, fmt.Sprintf("no hosts entry covers %s", where)
}

func hostText(t URLTarget) string {
	if t.Addr.Is6() {
		return "[" + t.Host + "]"
	}
	return t.Host
}
