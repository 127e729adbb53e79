package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// hostForm is the shape of a hosts entry.
type hostForm uint8

const (
	exactName  hostForm = iota + 1 // docs.python.org
	subdomains                     // *.wikipedia.org: never the apex
	anyName                        // *: any DNS name, never an IP literal
	ipLiteral                      // 127.0.0.1, [::1]
)

// hostEntry is one checked entry of [constraints] hosts.
type hostEntry struct {
	raw    string
	scheme string // "https", or "http" for an entry written http://...
	form   hostForm
	name   string     // ASCII, lowercase, without a trailing dot
	addr   netip.Addr // for ipLiteral
	port   uint16     // 0: any port (only * without a port)
}

const hostEntryShape = "a host entry is a name, *.name, * or an IP literal, with an optional :port"

// nameProfile turns a host name into the ASCII form grants and URLs are
// compared in. Non-transitional IDNA2008 mapping keeps "faß" apart from
// "fass"; STD3 rules admit letters, digits and hyphens only; the DNS length
// check rejects empty labels.
var nameProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.VerifyDNSLength(true),
)

// parseHostEntry checks one hosts entry.
func parseHostEntry(s string) (hostEntry, error) {
	e := hostEntry{raw: s, scheme: "https"}
	rest := s
	if after, ok := strings.CutPrefix(s, "http://"); ok {
		e.scheme, rest = "http", after
	}
	if err := refuseURLParts(rest); err != nil {
		return hostEntry{}, hostEntryError(s, err)
	}
	host, port, bracketed, err := splitHostPort(rest)
	if err != nil {
		return hostEntry{}, hostEntryError(s, err)
	}
	if err := e.setHost(host, bracketed); err != nil {
		return hostEntry{}, hostEntryError(s, err)
	}
	if err := e.setPort(port); err != nil {
		return hostEntry{}, hostEntryError(s, err)
	}
	return e, nil
}

func hostEntryError(s string, err error) error {
	return fmt.Errorf("host %q: %v; %s", s, err, hostEntryShape)
}

// refuseURLParts rejects entries that carry more than a host and port: a
// scheme other than the http:// prefix, a path, a query, userinfo or escapes.
func refuseURLParts(s string) error {
	switch {
	case s == "":
		return errors.New("it is empty")
	case strings.Contains(s, "://"):
		return errors.New("it looks like a URL (only the http:// prefix is allowed)")
	case strings.ContainsAny(s, "/?#@%\\"):
		return errors.New("it looks like a URL (it holds / ? # @ % or \\)")
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return errors.New("it holds a space or control character")
		}
	}
	return nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". An empty
// port after a colon is an error, not the default.
func splitHostPort(s string) (host, port string, bracketed bool, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, errors.New("an unclosed [")
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", true, nil
		}
		port, ok := strings.CutPrefix(rest, ":")
		if !ok || port == "" {
			return "", "", false, fmt.Errorf("%s after ] is not a :port", short(rest))
		}
		return host, port, true, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", false, nil
	case 1:
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return "", "", false, errors.New("an empty port")
		}
		return host, port, false, nil
	default:
		return "", "", false, errors.New("an IPv6 address must be written in brackets, [::1]")
	}
}

// parsePort accepts 1 to 65535 in plain decimal, without leading zeros, so
// that every parser reads the same number.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] < '1' || s[0] > '9' {
		return 0, fmt.Errorf("port %s is not a number from 1 to 65535", short(s))
	}
	return uint16(n), nil
}

func (e *hostEntry) setHost(host string, bracketed bool) error {
	switch {
	case bracketed:
		addr, err := parseIPv6(host)
		e.form, e.addr = ipLiteral, addr
		return err
	case host == "*":
		e.form = anyName
		return nil
	case strings.HasPrefix(host, "*."):
		name, err := asciiName(host[2:])
		e.form, e.name = subdomains, name
		return err
	}
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is4() {
		e.form, e.addr = ipLiteral, addr
		return nil
	}
	name, err := asciiName(host)
	e.form, e.name = exactName, name
	return err
}

// setPort fills in the port: the one written, any port for a bare *, else
// the scheme's default.
func (e *hostEntry) setPort(port string) error {
	switch {
	case port != "":
		p, err := parsePort(port)
		e.port = p
		return err
	case e.form == anyName:
		e.port = 0
	default:
		e.port = defaultPort(e.scheme)
	}
	return nil
}

func defaultPort(scheme string) uint16 {
	if scheme == "http" {
		return 80
	}
	return 443
}

// parseIPv6 accepts an IPv6 address without a zone. IPv4-mapped addresses
// are refused: they reach an IPv4 host under an IPv6 disguise, and an entry
// or URL should name that host as a.b.c.d.
func parseIPv6(s string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(s)
	switch {
	case err != nil || !addr.Is6():
		return netip.Addr{}, fmt.Errorf("[%s] is not an IPv6 address", short(s))
	case addr.Zone() != "":
		return netip.Addr{}, fmt.Errorf("[%s] has a zone", s)
	case addr.Is4In6():
		return netip.Addr{}, fmt.Errorf("[%s] is an IPv4-mapped address; write %s", s, addr.Unmap())
	}
	return addr, nil
}

// asciiName returns a host name's comparable form: IDNA to ASCII, lowercase,
// one trailing dot dropped (the root label names the same host). A wildcard
// anywhere is refused, and so is a name that URL parsers read as an IPv4
// address (2130706433, 0x7f.1, 127.1): it is not a DNS name.
func asciiName(s string) (string, error) {
	trimmed := strings.TrimSuffix(s, ".")
	if trimmed == "" || strings.Contains(trimmed, "*") || !utf8.ValidString(trimmed) {
		return "", fmt.Errorf("%s is not a host name", short(s))
	}
	ascii, err := nameProfile.ToASCII(trimmed)
	if err != nil {
		return "", fmt.Errorf("%s is not a valid host name: %s", short(s), clip(err.Error()))
	}
	if err := checkLabels(ascii); err != nil {
		return "", fmt.Errorf("%s is not a valid host name: %v", short(s), err)
	}
	if endsInNumber(ascii) {
		return "", fmt.Errorf("%s is a number, not a name; an IPv4 address is written a.b.c.d", short(s))
	}
	return ascii, nil
}

// checkLabels insists on letters, digits and inner hyphens, which the IDNA
// profile leaves to its optional hyphen check.
func checkLabels(ascii string) error {
	for _, label := range strings.Split(ascii, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("label %q must not be empty or start or end with -", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return fmt.Errorf("label %q holds %q", label, c)
			}
		}
	}
	return nil
}

// endsInNumber is the WHATWG URL standard's test for a host that is parsed
// as an IPv4 address: its last label is decimal digits or 0x and hex digits.
func endsInNumber(ascii string) bool {
	last := ascii[strings.LastIndexByte(ascii, '.')+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}
