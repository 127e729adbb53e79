package fdpass

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// fakeEgressd listens at a fresh path and hands each accepted connection to
// serve.
func fakeEgressd(t *testing.T, serve func(*net.UnixConn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fdpass")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "egress.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return path
}

func TestOpenEgress(t *testing.T) {
	auth := "Bearer s"
	path := fakeEgressd(t, func(c *net.UnixConn) {
		e, f, err := ReceiveFrameWithFile(c)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		open := e.Msg.(wire.EgressOpen)
		if open.Hosts[0] != "a.example" || *open.Authorization != auth {
			t.Errorf("got %#v", open)
		}
		if err := wire.WriteEnvelope(c, wire.Envelope{ID: e.ID, Final: true, Msg: wire.EgressReady{}}); err != nil {
			t.Error(err)
		}
		f.Write([]byte("served"))
	})
	end, err := OpenEgress(context.Background(), path, []string{"a.example"}, "POST", &auth)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	data, err := io.ReadAll(end)
	if err != nil || string(data) != "served" {
		t.Fatalf("sandbox end read %q, %v", data, err)
	}
}

func TestOpenEgressRefused(t *testing.T) {
	path := fakeEgressd(t, func(c *net.UnixConn) {
		e, f, _ := ReceiveFrameWithFile(c)
		if f != nil {
			f.Close()
		}
		wire.WriteEnvelope(c, wire.Envelope{ID: e.ID, Final: true, Msg: wire.WireError{Code: wire.BadMessage, Detail: "no"}})
	})
	end, err := OpenEgress(context.Background(), path, []string{"a.example"}, "GET", nil)
	if err == nil || end != nil || !strings.Contains(err.Error(), "bad_message: no") || wire.CodeOf(err) != wire.BadMessage {
		t.Fatalf("got %v, %v", end, err)
	}
}

func TestOpenEgressGivesUpWithItsContext(t *testing.T) {
	hold := make(chan struct{})
	path := fakeEgressd(t, func(c *net.UnixConn) { <-hold })
	defer close(hold)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := OpenEgress(ctx, path, []string{"a.example"}, "GET", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestOpenEgressNeedsHosts(t *testing.T) {
	if _, err := OpenEgress(context.Background(), "/nonexistent", nil, "GET", nil); err == nil {
		t.Fatal("no hosts accepted")
	}
}
