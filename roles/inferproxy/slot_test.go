package inferproxy

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"boxmaker/roles/internal/llamadouble"
)

// startSlotProxy runs inferproxy in front of the double with slots slots,
// inspect's being inspectSlot ([inspect] slot).
func startSlotProxy(t *testing.T, slots, inspectSlot int) (*harness, *llamadouble.Server) {
	t.Helper()
	model := llamadouble.New(llamadouble.Options{Slots: slots, Script: llamadouble.Script{Rules: []llamadouble.Rule{{Content: "ok"}}}})
	up := httptest.NewServer(model)
	t.Cleanup(up.Close)
	return startProxy(t, up.URL, Options{InspectSlot: inspectSlot, Log: log.New(io.Discard, "", 0)}), model
}

// chatBody is a chat request as loopd makes one, with more members.
func chatBody(more string) string {
	return `{"messages":[{"role":"user","content":"PIN 0"}],"stream":false,"cache_prompt":true` + more + `}`
}

// The attack of issue 23, finding 4: a chat request on the inspect slot
// with the prompt cache on would read, in its cache_n, how much of its
// prompt matched the handle's content inspectd had just asked about
// there. No request of loopd's runs on that slot, by id_slot or any other
// way of naming it, and none reaches the server.
func TestTheInspectSlotIsRefusedToLoopd(t *testing.T) {
	h, model := startSlotProxy(t, 3, -1) // the inspect slot is 2, the last
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, more := range []string{
		`,"id_slot":2`,
		`,"id_slot":5`, // llama-server wraps it: 5 % 3 == 2
		`,"id_slot":2.0`,
		`,"id_slot":2e0`,
		`,"id_slot":"2"`,
		`,"id_slot":-2`,
		`,"id\u005fslot":2`,
		`,"id_slot":0,"id_slot":2`,
		`,"x":` + deep + `,"id_slot":2`,
		`,"slot_id":2`,
		`,"id_slot":0,"n_cmpl":3`,
		`,"id_slot":0,"n":2`,
	} {
		e := roundTrip(t, h.client, newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader(chatBody(more))))
		name := more
		if len(name) > 60 {
			name = name[:60]
		}
		if e.status != 403 || !strings.Contains(string(e.body), "permission_error") {
			t.Errorf("%s: status %d %s, want 403", name, e.status, e.body)
		}
	}
	for _, r := range model.Requests() {
		if r.Path == "/v1/chat/completions" {
			t.Errorf("a refused request reached the server, on slot %d: %s", r.Slot, r.Body[:min(len(r.Body), 80)])
		}
	}
	for _, more := range []string{`,"id_slot":0`, `,"id_slot":1`, `,"id_slot":-1`, ``, `,"id_slot":1,"n":1`} {
		if e := roundTrip(t, h.client, newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader(chatBody(more)))); e.status != 200 {
			t.Errorf("%q: status %d %s, want 200", more, e.status, e.body)
		}
	}
	for _, r := range model.Requests() {
		if r.Chat != nil && r.Slot == 2 {
			t.Errorf("a chat request ran on the inspect slot: %s", r.Body)
		}
	}
}

// The configured slot is the one refused; a server of one slot keeps none
// apart (inspectd then asks nothing), so loopd has it.
func TestTheRefusedSlotIsTheConfiguredOne(t *testing.T) {
	for _, c := range []struct{ slots, inspect, slot, status int }{
		{3, 0, 0, 403}, {3, 0, 2, 200}, {1, -1, 0, 200}, {2, -1, 1, 403}, {2, 5, 1, 200},
	} {
		h, _ := startSlotProxy(t, c.slots, c.inspect)
		e := roundTrip(t, h.client, newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader(chatBody(fmt.Sprintf(`,"id_slot":%d`, c.slot)))))
		if e.status != c.status {
			t.Errorf("%d slots, [inspect] slot %d, id_slot %d: status %d, want %d", c.slots, c.inspect, c.slot, e.status, c.status)
		}
	}
}
