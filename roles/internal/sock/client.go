package sock

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"

	"boxmaker/wire"
)

// Client is one connection to a role's socket. Calls on it take turns.
type Client struct {
	mu     sync.Mutex
	conn   *net.UnixConn
	r      *bufio.Reader
	nextID uint64
}

// Dial connects to the socket at path.
func Dial(path string) (*Client, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return &Client{conn: c, r: bufio.NewReader(c)}, nil
}

// Conn is the underlying connection, for descriptor passing.
func (c *Client) Conn() *net.UnixConn { return c.conn }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Call sends msg and returns the final message of the response; partial
// frames before it go to onPartial, which may be nil. A final error message
// is returned as the error.
func (c *Client) Call(ctx context.Context, msg wire.Message, onPartial func(wire.Message) error) (wire.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	defer stop()
	c.nextID++
	id := c.nextID
	if err := wire.WriteEnvelope(c.conn, wire.Envelope{ID: id, Final: true, Msg: msg}); err != nil {
		return nil, c.failed(ctx, err)
	}
	for {
		e, err := wire.ReadEnvelope(c.r)
		if err != nil {
			return nil, c.failed(ctx, err)
		}
		if werr, ok := e.Msg.(wire.WireError); ok {
			return nil, werr
		}
		if e.ID != id {
			return nil, fmt.Errorf("reply for request %d while waiting for %d", e.ID, id)
		}
		if e.Final {
			return e.Msg, nil
		}
		if onPartial != nil {
			if err := onPartial(e.Msg); err != nil {
				return nil, err
			}
		}
	}
}

func (c *Client) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
