package sock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"boxmaker/wire"
)

// Replier sends the frames of one response; it fills in the request's id.
// Partial frames (Final false) may come first; the final frame ends it.
type Replier func(wire.Envelope) error

// Handler answers one request with exactly one final frame through reply.
// An error it returns, before any final frame, is answered as internal,
// except a Refusal and ErrNoAnswer. Its ctx ends, with cause ErrPeerGone,
// if the peer hangs up meanwhile.
type Handler func(ctx context.Context, peer Peer, req wire.Envelope, reply Replier) error

// FileHandler is a Handler for a socket whose frames each carry one
// descriptor: f came with req, and the handler owns it (keeps or closes it).
type FileHandler func(ctx context.Context, peer Peer, req wire.Envelope, f *os.File, reply Replier) error

// Refusal is an error a handler returns to refuse its request the way the
// gate refuses a kind it does not accept: the peer gets Code and Detail
// with the request's id, and the connection ends. A request the handler
// finds malformed is a broken rule of the protocol, not a failure to hide.
type Refusal struct {
	Code   wire.ErrorCode
	Detail string
}

func (r Refusal) Error() string { return string(r.Code) + ": " + r.Detail }

// ErrNoAnswer is what a handler returns to end its connection without an
// answer, for a request it gives up (gatewayd's expired approvals): the
// peer sees the connection close, as it did before the shared gate.
var ErrNoAnswer = errors.New("the request ended without an answer")

// The bounds a Server puts on its peers when its fields leave them zero.
const (
	// DefaultMaxConns bounds the connections open at once on one socket.
	// Each socket has one peer role, which holds a connection per running
	// turn or command: a handful for one owner. 64 leaves ample room for
	// that, and still stops a runaway or compromised peer from pinning
	// descriptors and goroutines without end.
	DefaultMaxConns = 64
	// DefaultFrameTimeout bounds how long the rest of a frame may take once
	// its first byte arrived. Peers write a frame (1 MiB at most) in one
	// Write on a local socket, so it arrives in far less than a second; 10 s
	// leaves room for a loaded machine, yet frees the goroutine and buffer a
	// peer that stalls mid-frame would hold. Idle time between frames is
	// not bounded: a connection waiting for its next request costs little.
	DefaultFrameTimeout = 10 * time.Second
	// defaultWatchTick is how long a handler runs before the watchman
	// watches its connection for a hangup (watchman.go); a hangup then
	// cancels it within another tick. 1 ms is more than a tool_list or a
	// denied call takes, and far less than the approvals that wait for
	// minutes and the sandboxes that run for tens of ms.
	defaultWatchTick = time.Millisecond
)

// Server serves one socket: the kinds a client may send on it, who may
// connect, and what answers. ServerFor fills it from the role table.
type Server struct {
	Name      string          // for log lines, e.g. "brokerd (loopd-brokerd)"
	Accepts   []string        // the kinds a client may send here
	AllowPeer func(Peer) bool // SO_PEERCRED check, beside the directory's permissions
	Handle    Handler
	Log       *log.Logger

	// Descriptors says that every request frame carries one descriptor
	// (SCM_RIGHTS); HandleFile answers them, instead of Handle.
	Descriptors bool
	HandleFile  FileHandler

	// MaxConns bounds the connections served at once; one past it gets an
	// error frame and is closed. Zero means DefaultMaxConns.
	MaxConns int
	// FrameTimeout bounds the time from a frame's first byte to its last;
	// a peer that misses it is dropped. Zero means DefaultFrameTimeout.
	FrameTimeout time.Duration

	// watchTick replaces defaultWatchTick where nonzero, for tests.
	watchTick time.Duration
}

func (s *Server) maxConns() int {
	if s.MaxConns > 0 {
		return s.MaxConns
	}
	return DefaultMaxConns
}

func (s *Server) tick() time.Duration {
	if s.watchTick > 0 {
		return s.watchTick
	}
	return defaultWatchTick
}

func (s *Server) frameTimeout() time.Duration {
	if s.FrameTimeout > 0 {
		return s.FrameTimeout
	}
	return DefaultFrameTimeout
}

// Serve accepts connections until ctx ends or ln fails, one goroutine per
// connection; requests on a connection are answered one after another.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	if s.Descriptors != (s.HandleFile != nil) || s.Descriptors == (s.Handle != nil) {
		return fmt.Errorf("%s: a socket whose frames carry descriptors needs HandleFile, any other Handle", s.Name)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx) // ends the watchman when Serve returns
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	w := newWatchman(s.tick())
	wg.Go(func() { w.run(ctx) })
	slots := make(chan struct{}, s.maxConns())
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-slots }()
				s.serveConn(ctx, w, c)
			})
		default:
			wg.Go(func() { s.refuseBusy(ctx, c) })
		}
	}
}

// refuseBusy answers a connection past MaxConns with one error frame and
// closes it; the connections already open go on being served.
func (s *Server) refuseBusy(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	peer, _ := PeerOf(c)
	s.Log.Printf("%s: refused a connection from uid %d pid %d: %d connections already open", s.Name, peer.UID, peer.PID, s.maxConns())
	refuse(c, 0, wire.Internal, fmt.Sprintf("%s: too many connections (limit %d)", s.Name, s.maxConns()))
}

func (s *Server) serveConn(ctx context.Context, w *watchman, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	peer, err := PeerOf(c)
	if err != nil || !s.AllowPeer(peer) {
		s.Log.Printf("%s: refused a connection from uid %d pid %d (%v)", s.Name, peer.UID, peer.PID, err)
		refuse(c, 0, wire.BadMessage, "this socket does not accept your uid")
		return
	}
	in := newFrameReader(c, s.Descriptors)
	for {
		req, err := in.next(s.frameTimeout())
		if !s.admit(c, peer, req, err) {
			return
		}
		if !s.answer(ctx, w, in.cr, peer, req) {
			return
		}
	}
}

// admit reports whether req goes to the handler: it was read whole, and
// its kind is one this socket accepts. Otherwise the peer is answered and
// the connection ends. A kind the socket does not accept is refused as
// such even when its frame came without the descriptor it should carry.
func (s *Server) admit(c *net.UnixConn, peer Peer, req request, err error) bool {
	if kind := wire.KindOf(req.Msg); req.Msg != nil && !slices.Contains(s.Accepts, kind) {
		closeFile(req.file)
		s.Log.Printf("%s: uid %d sent %s, which this socket does not accept; closing", s.Name, peer.UID, kind)
		refuse(c, req.ID, wire.BadMessage, fmt.Sprintf("kind %s is not accepted on this socket", kind))
		return false
	}
	if err != nil {
		s.refuseFrame(c, peer, req.ID, err)
		return false
	}
	return true
}

// refuseFrame answers a frame that could not be read or decoded, unless the
// stream simply ended. Its id is 0 unless the frame was decoded (and only
// its descriptor was wrong).
func (s *Server) refuseFrame(c *net.UnixConn, peer Peer, id uint64, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	s.Log.Printf("%s: uid %d: %v; closing", s.Name, peer.UID, err)
	refuse(c, id, wire.CodeOf(err), detailOf(err))
}

// refuse writes one error frame and ends the connection. The write has a
// deadline because a peer that never reads could otherwise block it, and
// with it this goroutine, for good.
func refuse(c *net.UnixConn, id uint64, code wire.ErrorCode, detail string) {
	_ = c.SetWriteDeadline(time.Now().Add(lingerTime))
	writeError(c, id, code, detail)
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

// answer runs the handler for req, with a context that ends if the peer
// hangs up meanwhile, and reports whether the connection stays open.
func (s *Server) answer(ctx context.Context, w *watchman, cr *connReader, peer Peer, req request) bool {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp := &response{conn: cr.conn, id: req.ID}
	w.begin(cr, cancel)
	err := s.handle(hctx, peer, req, resp.send)
	w.end(cr)
	resp.mu.Lock()
	defer resp.mu.Unlock()
	gone := errors.Is(context.Cause(hctx), ErrPeerGone)
	if !resp.done || err != nil {
		s.settle(cr.conn, peer, req, resp.done, gone, err)
	}
	return resp.done && err == nil && !gone
}

func (s *Server) handle(ctx context.Context, peer Peer, req request, reply Replier) error {
	if s.Descriptors {
		return s.HandleFile(ctx, peer, req.Envelope, req.file, reply)
	}
	return s.Handle(ctx, peer, req.Envelope, reply)
}

// settle ends a request that has no final frame or whose handler failed:
// it says why in the log and, where the peer is still there to read it,
// answers: a Refusal as itself, anything else but ErrNoAnswer as internal.
func (s *Server) settle(c *net.UnixConn, peer Peer, req request, done, gone bool, err error) {
	kind := wire.KindOf(req.Msg)
	var refusal Refusal
	switch {
	case gone && !done:
		s.Log.Printf("%s: uid %d hung up before %s %d was answered; its handler was cancelled", s.Name, peer.UID, kind, req.ID)
	case errors.Is(err, ErrNoAnswer) && !done:
		// The handler gave the request up; the connection closing says so.
	case errors.As(err, &refusal) && !done:
		s.Log.Printf("%s: uid %d: %s %d refused: %s; closing", s.Name, peer.UID, kind, req.ID, refusal.Detail)
		refuse(c, req.ID, refusal.Code, refusal.Detail)
	default:
		if err == nil {
			err = errors.New("no final frame")
		}
		s.Log.Printf("%s: %s %d: %v", s.Name, kind, req.ID, err)
		if !done {
			writeError(c, req.ID, wire.Internal, "the request failed")
		}
	}
}

// response is the state of one request's answer. answer holds its lock
// while it settles the request, because a handler may have handed send to a
// goroutine that calls it even after the handler returned.
type response struct {
	conn *net.UnixConn
	id   uint64
	mu   sync.Mutex
	done bool // the final frame was written
}

// send is the request's Replier.
func (r *response) send(e wire.Envelope) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return errors.New("the response already ended")
	}
	e.ID = r.id
	if err := wire.WriteEnvelope(r.conn, e); err != nil {
		return err
	}
	r.done = e.Final
	return nil
}

func writeError(w io.Writer, id uint64, code wire.ErrorCode, detail string) {
	_ = wire.WriteEnvelope(w, wire.Envelope{ID: id, Final: true, Msg: wire.WireError{Code: code, Detail: detail}})
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func detailOf(err error) string {
	var we wire.WireError
	if errors.As(err, &we) {
		return we.Detail
	}
	return err.Error()
}
