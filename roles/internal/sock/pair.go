package sock

import (
	"fmt"
	"log"
	"net"
	"slices"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
)

// The gate of a socket is derived from its pair in the role table, so that
// a listener says only which pair it serves and with what handler; what a
// client may send, and who may connect, are written once, in roles.Pairs.

// ListenPair creates the socket in which client dials listener under home,
// and returns it with the Server that guards it (ServerFor).
func ListenPair(home config.Paths, client, listener string, log *log.Logger) (*Server, *net.UnixListener, error) {
	pair, err := PairOf(client, listener)
	if err != nil {
		return nil, nil, err
	}
	srv, err := serverFor(pair, log)
	if err != nil {
		return nil, nil, err
	}
	ln, err := Listen(pair.Path(home.Home))
	if err != nil {
		return nil, nil, fmt.Errorf("listen for %s: %w", client, err)
	}
	return srv, ln, nil
}

// PathOf is the socket in which client dials listener under home: the one
// way every role finds a pair's socket, and the one error for a pair the
// role table lacks.
func PathOf(home config.Paths, client, listener string) (string, error) {
	pair, err := PairOf(client, listener)
	if err != nil {
		return "", err
	}
	return pair.Path(home.Home), nil
}

// ServerFor returns the Server of the pair in which client dials listener:
// its name, the kinds it accepts and the uids it admits (roles.PeerUIDs)
// come from the role table, and whether its frames carry a descriptor. The
// caller sets Handle (HandleFile for descriptors), and may change the
// bounds or, in a test, the peer check.
func ServerFor(client, listener string, log *log.Logger) (*Server, error) {
	pair, err := PairOf(client, listener)
	if err != nil {
		return nil, err
	}
	return serverFor(pair, log)
}

func serverFor(pair roles.Pair, log *log.Logger) (*Server, error) {
	if pair.Protocol != roles.Frames && pair.Protocol != roles.FramesWithDescriptor {
		return nil, fmt.Errorf("pair %s does not speak wire frames", pair.Dir())
	}
	allow, err := AllowClient(pair.Client)
	if err != nil {
		return nil, err
	}
	return &Server{Name: nameOf(pair), Accepts: pair.Accepts, AllowPeer: allow, Log: log,
		Descriptors: pair.Protocol == roles.FramesWithDescriptor}, nil
}

// AllowClient is the peer check of a socket that the role client dials:
// SO_PEERCRED's uid must be one roles.PeerUIDs lists.
func AllowClient(client string) (func(Peer) bool, error) {
	uids, err := roles.PeerUIDs(client)
	if err != nil {
		return nil, err
	}
	return func(p Peer) bool { return slices.Contains(uids, p.UID) }, nil
}

// PairOf is roles.PairOf with the one error for a pair the table lacks.
func PairOf(client, listener string) (roles.Pair, error) {
	pair, ok := roles.PairOf(client, listener)
	if !ok {
		return roles.Pair{}, fmt.Errorf("the role table has no %s-%s pair", client, listener)
	}
	return pair, nil
}

// nameOf names a pair's socket in log lines, e.g. "brokerd (loopd-brokerd)".
func nameOf(pair roles.Pair) string { return fmt.Sprintf("%s (%s)", pair.Listener, pair.Dir()) }
