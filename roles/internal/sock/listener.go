package sock

import (
	"fmt"
	"log"
	"net"
	"sync"

	"boxmaker/roles"
	"boxmaker/wire"
)

// Listener is the gate of a pair that speaks HTTP, where net/http runs the
// per-connection loop: it admits at accept, before a byte is read, only a
// peer whose uid the pair allows, and only while fewer than MaxConns of its
// connections are open, so no other uid's request is ever parsed. The
// routes of the pair's accept list are the handler's to check.
type Listener struct {
	*net.UnixListener
	Name      string
	AllowPeer func(Peer) bool // SO_PEERCRED check, beside the directory's permissions
	// Refuse answers a refused connection in the pair's protocol, saying
	// why, and closes it. It runs on a goroutine of its own.
	Refuse func(c *net.UnixConn, why Refusal)
	Log    *log.Logger
	// MaxConns bounds the connections open at once; zero means
	// DefaultMaxConns. Set it before the first Accept.
	MaxConns int

	once  sync.Once
	slots chan struct{}
}

// ListenerFor wraps ln, the socket of the pair in which client dials
// listener, in that pair's gate: its name and the uids it admits come from
// the role table. refuse answers a refused connection.
func ListenerFor(ln *net.UnixListener, client, listener string, refuse func(*net.UnixConn, Refusal), log *log.Logger) (*Listener, error) {
	pair, err := PairOf(client, listener)
	if err != nil {
		return nil, err
	}
	if pair.Protocol != roles.HTTP {
		return nil, fmt.Errorf("pair %s does not speak HTTP", pair.Dir())
	}
	allow, err := AllowClient(client)
	if err != nil {
		return nil, err
	}
	return &Listener{UnixListener: ln, Name: nameOf(pair), AllowPeer: allow, Refuse: refuse, Log: log}, nil
}

// Accept returns the next connection the gate admits; the others are
// handed to Refuse.
func (l *Listener) Accept() (net.Conn, error) {
	l.once.Do(func() { l.slots = make(chan struct{}, l.maxConns()) })
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if conn := l.admit(c); conn != nil {
			return conn, nil
		}
	}
}

func (l *Listener) maxConns() int {
	if l.MaxConns > 0 {
		return l.MaxConns
	}
	return DefaultMaxConns
}

// admit returns c, holding a slot until it is closed, or nil once it has
// gone to Refuse. As on a frame socket, the bound comes before the peer
// check: it needs no system call, and the directory keeps strangers out.
func (l *Listener) admit(c *net.UnixConn) net.Conn {
	select {
	case l.slots <- struct{}{}:
	default:
		peer, _ := PeerOf(c)
		l.Log.Printf("%s: refused a connection from uid %d pid %d: %d connections already open", l.Name, peer.UID, peer.PID, l.maxConns())
		go l.Refuse(c, Refusal{Code: wire.Internal, Detail: fmt.Sprintf("too many connections (limit %d)", l.maxConns())})
		return nil
	}
	peer, err := PeerOf(c)
	if err != nil || !l.AllowPeer(peer) {
		<-l.slots
		l.Log.Printf("%s: refused a connection from uid %d pid %d (%v)", l.Name, peer.UID, peer.PID, err)
		go l.Refuse(c, Refusal{Code: wire.BadMessage, Detail: "this socket does not accept your uid"})
		return nil
	}
	return &slotConn{UnixConn: c, free: sync.OnceFunc(func() { <-l.slots })}
}

// slotConn gives its slot back when net/http closes it, however often.
type slotConn struct {
	*net.UnixConn
	free func()
}

func (c *slotConn) Close() error {
	c.free()
	return c.UnixConn.Close()
}
