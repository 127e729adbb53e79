package sock

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// passed answers every request that got past the gate, so that the probe
// sees an answer that is not the gate's refusal.
func passed(_ context.Context, _ Peer, _ wire.Envelope, reply Replier) error {
	return reply(wire.Envelope{Final: true, Msg: wire.WireError{Code: wire.Internal, Detail: "past the gate"}})
}

func passedWithFile(ctx context.Context, p Peer, req wire.Envelope, f *os.File, reply Replier) error {
	f.Close()
	return passed(ctx, p, req, reply)
}

// The gate of every pair that speaks frames accepts exactly the kinds its
// row of the role table lists: each other kind the wire defines is refused
// with bad_message and the connection closed, each listed one reaches the
// handler. Each listener role probes its own sockets the same way.
func TestEveryPairAcceptsExactlyItsList(t *testing.T) {
	for _, pair := range roles.Pairs {
		if pair.Protocol == roles.HTTP {
			// Its gate admits peers at accept (TestListenerAdmitsAtAccept);
			// inferproxy checks the routes (TestInferSockServesItsPair).
			continue
		}
		t.Run(pair.Dir(), func(t *testing.T) {
			srv, err := ServerFor(pair.Client, pair.Listener, logTo(io.Discard))
			if err != nil {
				t.Fatal(err)
			}
			srv.Handle = passed
			if srv.Descriptors {
				srv.Handle, srv.HandleFile = nil, passedWithFile
			}
			gateprobe.Frames(t, serve(t, srv), pair)
		})
	}
}

// ListenPair puts the socket where the pair's directory is and names the
// server after it; the kinds and the peer check are the table's.
func TestListenPairUsesTheTable(t *testing.T) {
	home := config.Paths{Home: t.TempDir()}
	srv, ln, err := ListenPair(home, "loopd", "brokerd", logTo(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair, _ := roles.PairOf("loopd", "brokerd")
	if fi, err := os.Stat(home.Join("run", "loopd-brokerd", "broker.sock")); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("no socket in the pair's directory (%v)", err)
	}
	if srv.Name != "brokerd (loopd-brokerd)" || !slices.Equal(srv.Accepts, pair.Accepts) {
		t.Errorf("server %q accepts %v; want the table's %v", srv.Name, srv.Accepts, pair.Accepts)
	}
	if !srv.AllowPeer(Peer{UID: uint32(os.Getuid())}) {
		t.Error("the uid that runs every role here is refused")
	}
}

// A pair the table does not have, or one that speaks another protocol,
// has no frame server.
func TestServerForRefusesWhatTheTableDoesNotSay(t *testing.T) {
	for _, c := range [][2]string{{"loopd", "gatewayd"}, {"loopd", "inferproxy"}} {
		if _, err := ServerFor(c[0], c[1], logTo(io.Discard)); err == nil || !strings.Contains(err.Error(), c[0]+"-"+c[1]) {
			t.Errorf("ServerFor(%s, %s): %v", c[0], c[1], err)
		}
	}
}
