package policy

import (
	"errors"
	"net/netip"
	"strconv"
)

// HostSet is one call's hosts entries, checked: what egressd lets that call
// reach. It matches URLs with the same rules a grant's hosts constraint
// does, so that egressd and brokerd can never disagree about a URL. The zero
// HostSet allows nothing.
type HostSet struct {
	entries hostsMatcher
}

// ParseHostSet checks hosts entries as a grant's [constraints] hosts list.
// Any bad entry is an error, and so is an empty list, which would allow
// nothing: a set that parsed always has at least one entry.
func ParseHostSet(entries []string) (HostSet, error) {
	if len(entries) == 0 {
		return HostSet{}, errors.New("no hosts entries; an empty list allows nothing")
	}
	var errs []error
	m := make(hostsMatcher, 0, len(entries))
	for _, s := range entries {
		e, err := parseHostEntry(s)
		errs = appendErr(errs, err)
		m = append(m, e)
	}
	if len(errs) > 0 {
		return HostSet{}, errors.Join(errs...)
	}
	return HostSet{entries: m}, nil
}

// AllowsURL reports whether an entry covers raw, read as ParseURLTarget
// reads it, and says why in a sentence. The target is valid only when the
// URL parsed; a caller that goes on must reach that target, never its own
// parse of raw.
func (h HostSet) AllowsURL(raw string) (URLTarget, bool, string) {
	s := newSubject(raw)
	ok, why := h.entries.match(s)
	t, err := s.target()
	if err != nil {
		return URLTarget{}, false, why
	}
	return t, ok, why
}

// ListsIP reports whether an entry is exactly the IP literal addr with port
// port, whatever its scheme. IPv4-mapped IPv6 addresses are never listed
// (entries refuse them), so a caller unmaps an address before asking.
func (h HostSet) ListsIP(addr netip.Addr, port uint16) bool {
	for _, e := range h.entries {
		if e.form == ipLiteral && e.addr == addr && e.port == port {
			return true
		}
	}
	return false
}

// Authority is the target as a URL writes it after the scheme: host:port,
// with an IPv6 address in brackets. Callers build the URL they fetch from
// it, so that what was checked is what is sent.
func (t URLTarget) Authority() string {
	return hostText(t) + ":" + strconv.Itoa(int(t.Port))
}
