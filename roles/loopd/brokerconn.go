package loopd

import (
	"context"
	"sync"

	"boxmaker/roles/internal/sock"
)

// brokerConns bounds loopd's open connections to broker.sock. brokerd
// refuses connections past its [broker] max_connections, and it learns
// only a little later that a connection loopd closed is gone: with 64
// turns at once, each holding one connection and each closing and
// redialling after an error or an epoch's tool list, loopd reached the
// bound and turns failed with "too many connections" (make soak). A turn
// past loopd's own, lower bound waits for a connection instead.
type brokerConns struct {
	path  string
	slots chan struct{}
}

// newBrokerConns bounds the connections to three quarters of brokerd's
// limit, leaving room for ones closed but not yet seen closed.
func newBrokerConns(path string, brokerLimit int) *brokerConns {
	return &brokerConns{path: path, slots: make(chan struct{}, max(1, brokerLimit*3/4))}
}

// brokerConn is a connection that gives its slot back when closed.
type brokerConn struct {
	*sock.Client
	release func()
}

// Close closes the connection and frees its slot, once.
func (c *brokerConn) Close() error {
	err := c.Client.Close()
	c.release()
	return err
}

// dial takes a slot, waiting for one while ctx lasts, and connects,
// waiting a little for a brokerd that restarts.
func (b *brokerConns) dial(ctx context.Context) (*brokerConn, error) {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	c, err := redial(ctx, func(context.Context) (*sock.Client, error) { return sock.Dial(b.path) })
	if err != nil {
		<-b.slots
		return nil, err
	}
	return &brokerConn{Client: c, release: sync.OnceFunc(func() { <-b.slots })}, nil
}
