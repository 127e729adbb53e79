package inferproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"boxmaker/roles/internal/llamadouble"
)

// Forwarding to a real upstream (a llama-server over HTTP, here the
// scripted double on a loopback port, as `BOXMAKER_UPSTREAM` would name a
// real one) keeps nothing per request: after a warm-up, many more chat
// completions, streamed and whole, with prompts that differ each time, and
// probes of the other endpoints, leave the live heap and the goroutines
// where they were once the garbage is collected. The double keeps at most
// heapRecorded requests and a bounded cache per slot, so any growth is the
// proxy's, the clients' or net/http's.
func TestHeapStaysFlatOnTheUpstreamPath(t *testing.T) {
	const warmup, requests, clients = 200, 1600, 8
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One slot more than the clients use: the last is inspect's, which
	// loopd's requests never name.
	go llamadouble.New(llamadouble.Options{Slots: clients + 1, MaxRecorded: heapRecorded}).Serve(ctx, ln)
	h := startProxy(t, "http://"+ln.Addr().String(), Options{Log: log.New(io.Discard, "", 0), InspectSlot: -1})

	run := func(from, to int) {
		var wg sync.WaitGroup
		next := make(chan int, to-from)
		for i := from; i < to; i++ {
			next <- i
		}
		close(next)
		for c := range clients {
			wg.Go(func() {
				for i := range next {
					if err := heapRequest(h.client, c, i); err != nil {
						t.Errorf("request %d: %v", i, err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	run(0, warmup)
	before, goroutines := liveHeap(), runtime.NumGoroutine()
	run(warmup, warmup+requests)
	after := liveHeap()
	t.Logf("live heap after %d requests: %d KiB; after %d more: %d KiB (%+d bytes, %+.1f bytes a request); goroutines %d -> %d",
		warmup, before>>10, requests, after>>10, int64(after)-int64(before), float64(int64(after)-int64(before))/requests, goroutines, runtime.NumGoroutine())
	// A leak of a buffer, a header or a goroutine per request would be
	// tens of KiB here; what is allowed is noise from pools and caches.
	if after > before+256<<10 {
		t.Errorf("the live heap grew by %d KiB over %d requests", (after-before)>>10, requests)
	}
}

// heapRecorded bounds the requests the double keeps, as up does.
const heapRecorded = 8

// heapRequest sends request i of client c: mostly chat completions, every
// other one streamed, with a prompt of its own, and now and then a probe
// of /health, /props or /tokenize, as loopd makes them.
func heapRequest(client *http.Client, c, i int) error {
	method, path, body := "POST", "/v1/chat/completions", ""
	switch i % 10 {
	case 7:
		method, path = "GET", []string{"/health", "/props"}[i/10%2]
	case 8:
		path, body = "/tokenize", fmt.Sprintf(`{"content":"request %d of client %d"}`, i, c)
	default:
		prompt := strings.Repeat(fmt.Sprintf("turn %d of session %d. ", i, c), 1+i%20)
		body = fmt.Sprintf(`{"messages":[{"role":"system","content":"You are boxmaker."},{"role":"user","content":%q}],"stream":%t,"cache_prompt":true,"id_slot":%d}`, prompt, i%2 == 0, c)
	}
	req, err := http.NewRequest(method, "http://infer.sock"+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d", method, path, resp.StatusCode)
	}
	return nil
}

// liveHeap is the heap still reachable after two collections (the second
// frees what finalizers of the first let go).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
