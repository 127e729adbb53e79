package roles

import (
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"

	"boxmaker/wire"
)

// Every pair joins two roles of the table, says how it speaks, and has an
// accept list of things that exist: kinds the wire defines, or HTTP
// routes. The listeners' gates enforce exactly these lists (sock's
// TestEveryPairAcceptsExactlyItsList, and each listener role's gate test).
func TestEveryPairHasAnAcceptList(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Pairs {
		if seen[p.Dir()] {
			t.Errorf("pair %s is listed twice", p.Dir())
		}
		seen[p.Dir()] = true
		if _, ok := Lookup(p.Client); !ok {
			t.Errorf("pair %s: no role %q", p.Dir(), p.Client)
		}
		if spec, ok := Lookup(p.Listener); !ok || !spec.Daemon {
			t.Errorf("pair %s: the listener %q is not a daemon of the table", p.Dir(), p.Listener)
		}
		if len(p.Accepts) == 0 {
			t.Errorf("pair %s accepts nothing", p.Dir())
		}
		if dup := duplicate(p.Accepts); dup != "" {
			t.Errorf("pair %s lists %q twice", p.Dir(), dup)
		}
		for _, a := range p.Accepts {
			if err := checkAccepted(p.Protocol, a); err != "" {
				t.Errorf("pair %s accepts %q: %s", p.Dir(), a, err)
			}
		}
	}
}

// checkAccepted says what is wrong with one entry of an accept list.
func checkAccepted(proto Protocol, entry string) string {
	switch proto {
	case Frames, FramesWithDescriptor:
		if !slices.Contains(wire.Kinds(), entry) {
			return "not a kind the wire defines"
		}
	case HTTP:
		method, path, ok := strings.Cut(entry, " ")
		if !ok || (method != http.MethodGet && method != http.MethodPost) || !strings.HasPrefix(path, "/") {
			return `not "GET /path" or "POST /path"`
		}
	default:
		return "the pair has no protocol"
	}
	return ""
}

func duplicate(list []string) string {
	sorted := slices.Sorted(slices.Values(list))
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return sorted[i]
		}
	}
	return ""
}

// A compromised loopd must not be able to approve anything (DESIGN.md
// section 1): an approval's answer is accepted only on the owner's socket
// to brokerd, and gatewayd's decisions only come back as answers on
// gateway.sock, which brokerd dials.
func TestOnlyTheOwnerSocketTakesApprovalAnswers(t *testing.T) {
	for _, p := range Pairs {
		if slices.Contains(p.Accepts, "approval_answer") && p.Dir() != "bxctl-brokerd" {
			t.Errorf("pair %s accepts approval_answer", p.Dir())
		}
		if slices.Contains(p.Accepts, "approval_decision") {
			t.Errorf("pair %s accepts approval_decision, which is only ever an answer", p.Dir())
		}
	}
}

// NamesSessions says something only of a pair that can send chat_send.
func TestNamesSessionsOnlyWhereChatIs(t *testing.T) {
	for _, p := range Pairs {
		if p.NamesSessions && !slices.Contains(p.Accepts, "chat_send") {
			t.Errorf("pair %s names sessions but accepts no chat_send", p.Dir())
		}
	}
}

// Each State entry's reader is a daemon, and a file lies in a directory
// its role owns, listed before it.
func TestStateEntries(t *testing.T) {
	for _, spec := range Table {
		seen := map[string]bool{}
		for _, st := range spec.State {
			if r, ok := Lookup(st.Reader); st.Reader != "" && (!ok || !r.Daemon) {
				t.Errorf("%s: %s's reader %q is not a daemon of the table", spec.Name, st.Path, st.Reader)
			}
			if st.File && !seen[path.Dir(st.Path)] {
				t.Errorf("%s: the file %s is not in a directory listed before it", spec.Name, st.Path)
			}
			if st.Mode&^0o777 != 0 || !spec.Daemon {
				t.Errorf("%s: %s: mode %v, daemon %v", spec.Name, st.Path, st.Mode, spec.Daemon)
			}
			seen[st.Path] = true
		}
	}
}

// Each directory beside config.toml is read by one daemon, or by the two
// roles of a pair, so that a group holds exactly its readers.
func TestEtcReaders(t *testing.T) {
	for _, e := range Etc {
		for _, r := range e.Readers {
			if spec, ok := Lookup(r); !ok || !spec.Daemon {
				t.Errorf("%s: reader %q is not a daemon of the table", e.Path, r)
			}
		}
		switch len(e.Readers) {
		case 1:
		case 2:
			_, ab := PairOf(e.Readers[0], e.Readers[1])
			_, ba := PairOf(e.Readers[1], e.Readers[0])
			if !ab && !ba {
				t.Errorf("%s: readers %q share no pair, so no group holds just them", e.Path, e.Readers)
			}
		default:
			t.Errorf("%s: %d readers; one, or the two of a pair", e.Path, len(e.Readers))
		}
	}
}

// Quarantined inspect requests hold a handle's content, so whoever takes
// them shares no process and no uid with what carries loopd's requests
// (issue 23, finding 3): a compromised inferproxy once held both and could
// bridge a handle's secret into a session brokerd counts as clean. The
// role that listens for them listens for nobody else, and loopd dials it
// through no pair.
func TestInspectRequestsHaveARoleOfTheirOwn(t *testing.T) {
	var listeners []string
	for _, p := range Pairs {
		if slices.Contains(p.Accepts, "inspect_request") {
			listeners = append(listeners, p.Listener)
		}
	}
	if len(listeners) != 1 {
		t.Fatalf("inspect_request is accepted by %v, want exactly one role", listeners)
	}
	quarantine, _ := Lookup(listeners[0])
	for _, p := range Pairs {
		if p.Listener == quarantine.Name && p.Client != "brokerd" {
			t.Errorf("%s also listens for %s (%s)", quarantine.Name, p.Client, p.Dir())
		}
		if p.Client == "loopd" && p.Listener == quarantine.Name {
			t.Errorf("loopd reaches %s through %s", quarantine.Name, p.Dir())
		}
	}
	for _, spec := range Table {
		if spec.Name != quarantine.Name && spec.User != "" && spec.User == quarantine.User {
			t.Errorf("%s runs as %s, the user of %s too", quarantine.Name, quarantine.User, spec.Name)
		}
	}
	if quarantine.User == "" || !quarantine.Daemon {
		t.Errorf("%s is no daemon under a user of its own: %+v", quarantine.Name, quarantine)
	}
}
