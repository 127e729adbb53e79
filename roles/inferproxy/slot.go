package inferproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"boxmaker/roles/internal/upstream"
)

// chatPath is the one endpoint whose body names a slot.
const chatPath = "/v1/chat/completions"

// slotKeys are the members of a chat request that choose slots:
// llama-server's id_slot (and slot_id, its older name), and n_cmpl and n,
// which run that many completions on as many slots.
var slotKeys = []string{"id_slot", "slot_id", "n_cmpl", "n"}

// slotRefusal reports why a chat request of loopd's may not go upstream,
// "" when it may. The inspect slot holds a handle's content while inspectd
// asks there, so no request of loopd's may run on it (issue 23): one
// naming it, or a slot id llama-server would wrap onto it (it takes
// id_slot modulo the number of slots), or a form of id_slot other than a
// plain slot number (llama-server reads 2.0 as 2), is refused, and so is
// asking for several completions, which take further slots. A request
// that names no slot lets the server choose; inspectd asks behind a fresh
// nonce with the prompt cache off, so such a request can learn nothing
// from where it lands.
func (p *proxy) slotRefusal(r *http.Request, body []byte) (string, error) {
	members, dup, ok := topMembers(body)
	if !ok {
		return "", nil // not a JSON object: llama-server refuses it itself
	}
	if dup != "" {
		return fmt.Sprintf("%s appears twice", dup), nil
	}
	if _, ok := members["slot_id"]; ok {
		return "slot_id is not forwarded; name the slot with id_slot", nil
	}
	for _, key := range []string{"n_cmpl", "n"} {
		if v, ok := members[key]; ok && string(v) != "1" {
			return key + " must be 1: more completions would take other slots", nil
		}
	}
	raw, ok := members["id_slot"]
	if !ok || string(raw) == "-1" {
		return "", nil
	}
	slot, err := strconv.Atoi(string(raw))
	if err != nil || slot < 0 || strconv.Itoa(slot) != string(raw) {
		return fmt.Sprintf("id_slot %.20s is not a slot number", raw), nil
	}
	total, err := upstream.TotalSlots(r.Context(), &http.Client{Transport: p.transport}, p.upstream)
	if err != nil {
		return "", err
	}
	reserved, kept := p.inspect.ReservedSlot(total)
	switch {
	case slot >= total:
		return fmt.Sprintf("id_slot %d is not among the server's %d slots", slot, total), nil
	case kept && slot == reserved:
		return fmt.Sprintf("slot %d is inspect's own ([inspect] slot): loopd's requests never run there", slot), nil
	}
	return "", nil
}

// readBody reads a request body up to MaxRequestBytes, and the body to
// send on in its place: the same bytes, framed as they came.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength == 0 {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// topMembers returns the members of the JSON object body starts with,
// each name (unescaped, as llama-server reads it) with its raw value, the
// first of slotKeys that appears twice, and ok false when body does not
// start with an object. Only what follows the object is ignored: a body
// with more after it is one llama-server refuses. Nested values are
// skipped by counting brackets outside strings, which is exact on the
// valid JSON llama-server accepts and has no depth limit to slip past.
func topMembers(body []byte) (members map[string]json.RawMessage, dup string, ok bool) {
	s := scanner{b: body}
	if !s.skip('{') {
		return nil, "", false
	}
	members = map[string]json.RawMessage{}
	if s.skip('}') {
		return members, "", true
	}
	for {
		start := s.i
		if !s.str() {
			return nil, "", false
		}
		var name string
		if json.Unmarshal(body[start:s.i], &name) != nil || !s.skip(':') {
			return nil, "", false
		}
		s.ws()
		start = s.i
		if !s.value() {
			return nil, "", false
		}
		if _, seen := members[name]; seen && dup == "" && isSlotKey(name) {
			dup = name
		}
		members[name] = json.RawMessage(body[start:s.i])
		switch {
		case s.skip(','):
			s.ws()
		case s.skip('}'):
			return members, dup, true
		default:
			return nil, "", false
		}
	}
}

func isSlotKey(name string) bool {
	for _, k := range slotKeys {
		if k == name {
			return true
		}
	}
	return false
}

// scanner walks JSON text by hand, without recursion.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// skip passes white space and then c, and reports whether c was there.
func (s *scanner) skip(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str passes one string, escapes and all.
func (s *scanner) str() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return true
		}
	}
	return false
}

// value passes one value: a string, an object or array with all it holds,
// or a scalar up to the next delimiter.
func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return true
			}
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(s.b[s.i])) {
		s.i++
	}
	return s.i > start
}
