package loopd

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// loopd never holds more connections to brokerd than three quarters of
// brokerd's bound: a dial past it waits for a close, or for its context.
func TestBrokerConnectionsAreBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	b := newBrokerConns(path, 4)
	var held []*brokerConn
	for range 3 {
		c, err := b.dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if c, err := b.dial(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fourth connection past the bound of 3: %v, %v", c, err)
	}
	type dialed struct {
		c   *brokerConn
		err error
	}
	got := make(chan dialed, 1)
	go func() {
		c, err := b.dial(context.Background())
		got <- dialed{c, err}
	}()
	held[0].Close()
	held[0].Close() // a second close must not free a second slot
	w := <-got
	if w.err != nil {
		t.Fatalf("the waiting dial after a close: %v", w.err)
	}
	if n := len(b.slots); n != 3 {
		t.Fatalf("%d slots taken, want 3 (two held and the waiter's)", n)
	}
	w.c.Close()
	if n := len(b.slots); n != 2 {
		t.Fatalf("%d slots taken after the waiter closed, want 2", n)
	}
}
