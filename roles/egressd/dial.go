package egressd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"boxmaker/policy"
)

// guard is one call's dialer. It connects only to host:port pairs whose URL
// passed the hosts check, resolves each name once, refuses the whole
// connection if any address is special and unlisted, and dials the checked
// addresses themselves, so that nothing resolves the name again.
type guard struct {
	hosts          policy.HostSet
	resolver       Resolver
	resolveTimeout time.Duration
	beforeConnect  func(netip.AddrPort) error

	mu       sync.Mutex
	approved map[string]bool // authorities (host:port) that passed AllowsURL
}

func (s *server) newGuard(hosts policy.HostSet) *guard {
	return &guard{hosts: hosts, resolver: s.resolver, resolveTimeout: s.resolveTimeout, beforeConnect: s.beforeConnect, approved: map[string]bool{}}
}

func (gd *guard) approve(t policy.URLTarget) {
	gd.mu.Lock()
	defer gd.mu.Unlock()
	gd.approved[t.Authority()] = true
}

func (gd *guard) isApproved(address string) bool {
	gd.mu.Lock()
	defer gd.mu.Unlock()
	return gd.approved[address]
}

// dial is the transport's DialContext; address is the URL's host:port.
func (gd *guard) dial(ctx context.Context, _, address string) (net.Conn, error) {
	if !gd.isApproved(address) {
		return nil, refused("egressd will not connect to %s: no URL check approved it", address)
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, err
	}
	addrs, err := gd.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	checked, err := gd.check(host, addrs, uint16(port))
	if err != nil {
		return nil, err
	}
	conn, err := gd.connect(ctx, checked)
	if err != nil {
		return nil, connectFailure(ctx, address, err)
	}
	return conn, nil
}

// resolve asks the resolver once; an IP literal needs no question.
func (gd *guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{addr}, nil
	}
	// Bounded on its own: without a network a name server that never
	// answers would take the whole call's time, and say less.
	ctx, cancel := context.WithTimeout(ctx, gd.resolveTimeout)
	defer cancel()
	addrs, err := gd.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, resolveFailure(host, err, gd.resolveTimeout)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	return addrs, nil
}

// check passes addrs only if every one is allowed: a name with one private
// address among public ones is refused, whichever the dialer would pick.
// The addresses come back unmapped, as they will be dialed.
func (gd *guard) check(host string, addrs []netip.Addr, port uint16) ([]netip.AddrPort, error) {
	out := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		if why := gd.denies(a, port); why != "" {
			f := refused("%s resolves to a %s address, which the grant does not list as an IP literal", host, why)
			f.detail = fmt.Sprintf("%s (%s port %d is %s)", f.public, a, port, why)
			return nil, f
		}
		out = append(out, netip.AddrPortFrom(a.Unmap(), port))
	}
	return out, nil
}

// denies says why a connection to addr:port is not allowed, or "" when it
// is: the hosts entries list that exact IP literal, or the address is
// public. Listed means listed with that port.
func (gd *guard) denies(addr netip.Addr, port uint16) string {
	if gd.hosts.ListsIP(addr.Unmap(), port) {
		return ""
	}
	return specialKind(addr)
}

// connect dials the checked addresses in the resolver's order until one
// answers. Each dial re-checks, in Control, the address the socket is
// actually about to connect to.
func (gd *guard) connect(ctx context.Context, checked []netip.AddrPort) (net.Conn, error) {
	var last error
	for _, ap := range checked {
		d := net.Dialer{Timeout: connectTimeout, KeepAlive: -1, Control: gd.control(ap)}
		conn, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return conn, nil
		}
		var f *failure
		if errors.As(err, &f) || ctx.Err() != nil {
			return nil, err
		}
		last = err
	}
	return nil, last
}

// control refuses a connect to anything but want, and anything the address
// rules deny, whatever reached the dialer.
func (gd *guard) control(want netip.AddrPort) func(string, string, syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		got, err := netip.ParseAddrPort(address)
		if err != nil || got.Addr().Unmap() != want.Addr() || got.Port() != want.Port() {
			f := refused("egressd refused to connect to an address it had not checked")
			f.detail = fmt.Sprintf("%s: the dialer was about to connect to %s, not %s", f.public, address, want)
			return f
		}
		if why := gd.denies(got.Addr(), got.Port()); why != "" {
			return refused("egressd refused to connect to a %s address", why)
		}
		if gd.beforeConnect != nil {
			return gd.beforeConnect(got)
		}
		return nil
	}
}
