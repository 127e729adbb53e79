package egressd

import "net/netip"

// specialRanges are the special-purpose blocks of the IANA IPv4 and IPv6
// registries and their relatives that no tool may reach unless its grant
// lists the exact IP literal. IPv4-mapped addresses are not listed: they are
// unmapped and judged as the IPv4 address they reach.
var specialRanges = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/96"), "unspecified, loopback or IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (Teredo and others)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("5f00::/16"), "segment routing"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// specialKind says why addr is not a public unicast address, or "" when it
// is one. An IPv4-mapped address is judged both as written and unmapped, so
// that ::ffff:127.0.0.1 is loopback; a zone means a link, never the web.
func specialKind(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid"
	}
	if addr.Zone() != "" {
		return "scoped to a link"
	}
	for _, a := range []netip.Addr{addr, addr.Unmap()} {
		for _, r := range specialRanges {
			if r.prefix.Contains(a) {
				return r.why
			}
		}
		// A belt to the list's braces: netip knows loopback, link-local,
		// multicast, unspecified and broadcast on its own.
		if !a.IsGlobalUnicast() {
			return "not global unicast"
		}
	}
	return ""
}
