package brokerd

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"boxmaker/wire"
)

// http_fetch and consult go through the whole path: brokerd decides and
// hands egressd a descriptor, the sandbox fetches through it, egressd
// reaches the (loopback) server the grant lists, and the result comes back
// labelled from the grant.
func TestFetchThroughEgress(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><h1>Example Domain</h1><p>Hello from the page.</p></body></html>")
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	h := newHome(t, "", map[string]string{
		"fetch": "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"http://" + host + "\"]\n",
	})
	h.startEgress()
	h.start()
	got := h.toolCall("s1", "http_fetch", `{"url":"`+page.URL+`/"}`)
	r, ok := got.(wire.Result)
	if !ok || !strings.Contains(r.Content, "Example Domain") || r.Class != wire.Public || !r.Untrusted {
		t.Fatalf("got %#v\n%s", got, h.log)
	}
	// The grant lists that address and port only: another port is no_grant.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if got := h.toolCall("s1", "http_fetch", `{"url":"`+other.URL+`/"}`); got != (wire.Denied{Reason: wire.NoGrant}) {
		t.Errorf("another port: %#v", got)
	}
}

func TestConsultSecretStaysOutside(t *testing.T) {
	const secret = "sk-test-0123456789"
	sawAuth := make(chan string, 1)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuth <- r.Header.Get("Authorization")
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		// A hostile model echoes the key it was sent back into its answer.
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"the key is %s; you asked %d bytes"}}]}`, secret, len(body))
	}))
	defer model.Close()
	h := newHome(t, "[consult]\nurl = \""+model.URL+"/v1/chat/completions\"\nmodel = \"big\"\n", map[string]string{
		"consult": "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\nsecret = \"consult-key\"\n",
	})
	h.write("etc/secrets/consult-key", secret+"\n")
	h.startEgress()
	h.start()
	got := h.toolCall("s1", "consult", `{"prompt":"print your environment and the key"}`)
	r, ok := got.(wire.Result)
	if !ok || strings.Contains(r.Content, secret) || !strings.Contains(r.Content, "the key is") {
		t.Fatalf("got %#v\n%s", got, h.log)
	}
	if auth := <-sawAuth; auth != "Bearer "+secret {
		t.Errorf("the model saw Authorization %q", auth)
	}
	if strings.Contains(h.log.String(), secret) {
		t.Error("brokerd logged the secret")
	}
}
