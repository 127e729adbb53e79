package sock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"sync"
	"time"

	"boxmaker/wire"
)

// Replier sends the frames of one response; it fills in the request's id.
// Partial frames (Final false) may come first; the final frame ends it.
type Replier func(wire.Envelope) error

// Handler answers one request with exactly one final frame through reply.
// An error it returns, before any final frame, is answered as internal.
type Handler func(ctx context.Context, peer Peer, req wire.Envelope, reply Replier) error

// Server serves one socket: the kinds a client may send on it, who may
// connect, and what answers.
type Server struct {
	Name      string          // for log lines, e.g. "brokerd tool socket"
	Accepts   []string        // the kinds a client may send here
	AllowPeer func(Peer) bool // SO_PEERCRED check, beside the directory's permissions
	Handle    Handler
	Log       *log.Logger
}

// Serve accepts connections until ctx ends or ln fails, one goroutine per
// connection; requests on a connection are answered one after another.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, c)
		}()
	}
}

func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	peer, err := PeerOf(c)
	if err != nil || !s.AllowPeer(peer) {
		s.Log.Printf("%s: refused a connection from uid %d pid %d (%v)", s.Name, peer.UID, peer.PID, err)
		writeError(c, 0, wire.BadMessage, "this socket does not accept your uid")
		linger(c)
		return
	}
	r := bufio.NewReader(c)
	for {
		req, err := wire.ReadEnvelope(r)
		if err != nil {
			s.refuseFrame(c, peer, err)
			return
		}
		if kind := wire.KindOf(req.Msg); !slices.Contains(s.Accepts, kind) {
			s.Log.Printf("%s: uid %d sent %s, which this socket does not accept; closing", s.Name, peer.UID, kind)
			writeError(c, req.ID, wire.BadMessage, fmt.Sprintf("kind %s is not accepted on this socket", kind))
			linger(c)
			return
		}
		if !s.answer(ctx, c, peer, req) {
			return
		}
	}
}

// refuseFrame answers a frame that could not be read or decoded, unless the
// stream simply ended. Its id is unknown, so the error carries id 0.
func (s *Server) refuseFrame(c *net.UnixConn, peer Peer, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	s.Log.Printf("%s: uid %d: %v; closing", s.Name, peer.UID, err)
	writeError(c, 0, wire.CodeOf(err), detailOf(err))
	linger(c)
}

// linger ends our side and discards what the peer still sends, for a short
// while: closing a socket with unread data resets it, and the peer would
// lose the error frame that says why.
func linger(c *net.UnixConn) {
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, wire.MaxFrame+4))
}

const lingerTime = time.Second

// answer runs the handler for req and reports whether the connection stays open.
func (s *Server) answer(ctx context.Context, c net.Conn, peer Peer, req wire.Envelope) bool {
	var mu sync.Mutex
	done := false
	reply := func(e wire.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return errors.New("the response already ended")
		}
		e.ID = req.ID
		if err := wire.WriteEnvelope(c, e); err != nil {
			return err
		}
		done = e.Final
		return nil
	}
	err := s.Handle(ctx, peer, req, reply)
	mu.Lock()
	defer mu.Unlock()
	if err != nil || !done {
		if err == nil {
			err = errors.New("no final frame")
		}
		s.Log.Printf("%s: %s %d: %v", s.Name, wire.KindOf(req.Msg), req.ID, err)
		if !done {
			writeError(c, req.ID, wire.Internal, "the request failed")
		}
		return false
	}
	return true
}

func writeError(w io.Writer, id uint64, code wire.ErrorCode, detail string) {
	_ = wire.WriteEnvelope(w, wire.Envelope{ID: id, Final: true, Msg: wire.WireError{Code: code, Detail: detail}})
}

func detailOf(err error) string {
	var we wire.WireError
	if errors.As(err, &we) {
		return we.Detail
	}
	return err.Error()
}
