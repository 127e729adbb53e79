package loopd

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"boxmaker/wire"
)

// epochState is a session's current epoch as its turns use it: the open
// file, the prompt, the records written so far, and what the last reply
// said about the server's cache.
type epochState struct {
	log      *epochLog
	epoch    wire.Epoch
	slot     uint32
	prompt   prompt
	records  []wire.LogRecord // written and durable
	nextCall wire.CallID      // rises across the whole session

	lastPrompt uint64 // the last reply's prompt tokens in this epoch; 0 when unknown
	context    uint64 // its prompt and predicted tokens: what the slot holds
	since      int    // bytes of messages written after that reply
}

// sessionScan is what a session's files say.
type sessionScan struct {
	epoch   wire.Epoch
	start   wire.SessionStart // of the latest epoch
	latest  epochRead
	turns   uint64 // user records in every epoch
	maxCall wire.CallID
	updated wire.Timestamp
}

func (sc sessionScan) info() wire.SessionInfo {
	return wire.SessionInfo{Session: sc.start.Session, Epoch: sc.epoch, Updated: sc.updated, Turns: sc.turns}
}

// epochsIn lists the epochs that have a file in dir, in order.
func epochsIn(dir string) ([]wire.Epoch, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []wire.Epoch
	for _, e := range entries {
		num, ok := strings.CutSuffix(e.Name(), ".jsonl")
		n, err := strconv.ParseUint(num, 10, 32)
		if ok && err == nil && n > 0 && strconv.FormatUint(n, 10) == num {
			out = append(out, wire.Epoch(n))
		}
	}
	slices.Sort(out)
	return out, nil
}

// errNoEpoch says a session directory holds no epoch with a whole line:
// the session was never created, or its creation was cut short.
var errNoEpoch = errors.New("no epoch file")

// scanSession reads every epoch of a session. Only the latest epoch may end
// in a torn line: the others were closed by an EpochEnd made durable
// before the next epoch began.
func scanSession(dir string, id wire.SessionID) (sessionScan, error) {
	epochs, err := epochsIn(dir)
	if err != nil {
		return sessionScan{}, err
	}
	if len(epochs) == 0 {
		return sessionScan{}, errNoEpoch
	}
	var sc sessionScan
	for i, e := range epochs {
		path := epochFile(dir, e)
		r, err := readEpoch(path)
		if err != nil {
			return sc, err
		}
		if len(r.records) == 0 && i == len(epochs)-1 {
			break // a crash cut the epoch's creation short; it is begun again
		}
		if r.torn > 0 && i < len(epochs)-1 {
			return sc, fmt.Errorf("%s ends in a torn line but is not the latest epoch", path)
		}
		start, ok := firstStart(r.records)
		if !ok || start.Session != id || start.Epoch != e {
			return sc, fmt.Errorf("%s does not begin with session_start for session %s epoch %d", path, id, e)
		}
		sc.count(r.records)
		sc.epoch, sc.start, sc.latest = e, start, r
	}
	if sc.epoch == 0 {
		return sc, errNoEpoch
	}
	return sc, nil
}

func firstStart(records []wire.LogRecord) (wire.SessionStart, bool) {
	if len(records) == 0 {
		return wire.SessionStart{}, false
	}
	s, ok := records[0].(wire.SessionStart)
	return s, ok
}

func (sc *sessionScan) count(records []wire.LogRecord) {
	for _, r := range records {
		switch r := r.(type) {
		case wire.User:
			sc.turns++
		case wire.ToolResult:
			sc.maxCall = max(sc.maxCall, r.Call)
		}
		sc.updated = max(sc.updated, wire.RecordTime(r))
	}
}

// wholeSteps is how many of an epoch's records form whole steps. Every
// flush ends with a SessionStart, an Assistant, a ToolResult or an
// EpochEnd; a User or CacheLoss after the last of those is what remains of
// a step whose write a crash cut short, and is dropped with it.
func wholeSteps(records []wire.LogRecord) int {
	for n := len(records); n > 0; n-- {
		switch records[n-1].(type) {
		case wire.SessionStart, wire.Assistant, wire.ToolResult, wire.EpochEnd:
			return n
		}
	}
	return 0
}

// unanswered lists the calls of the epoch's last assistant record that have
// no tool result yet: a turn stopped (loopd killed or stopped) while they
// ran. Results are written in call order, so they are the last ones.
func unanswered(records []wire.LogRecord) []wire.ToolCall {
	answered := 0
	for i := len(records) - 1; i >= 0; i-- {
		switch r := records[i].(type) {
		case wire.ToolResult:
			answered++
		case wire.Assistant:
			if answered >= len(r.ToolCalls) {
				return nil
			}
			return r.ToolCalls[answered:]
		case wire.User, wire.SessionStart:
			return nil
		}
	}
	return nil
}

// interrupted is the result given to a call whose turn stopped before its
// answer was written. It may have run: brokerd's audit log says.
func interrupted(now wire.Timestamp, call wire.CallID, c wire.ToolCall) wire.ToolResult {
	return wire.ToolResult{Time: now, Call: call, ToolCallID: c.ID, Class: wire.Private,
		Content: fmt.Sprintf("failed: the turn stopped (loopd was stopped or restarted) before this call's result was recorded; it may have run as call %d", call)}
}

// bytes is the size of everything the epoch sends, for estimating tokens
// when no reply has said how many there are.
func (st *epochState) bytes() int {
	n := len(st.prompt.System)
	if st.prompt.Summary != "" {
		n += len(summaryMessage(st.prompt.Summary)) + len(summaryAck)
	}
	for _, t := range st.prompt.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	for _, r := range st.records {
		n += recordBytes(r)
	}
	return n
}

func recordBytes(r wire.LogRecord) int {
	switch r := r.(type) {
	case wire.User:
		return len(r.Content)
	case wire.ToolResult:
		return len(r.Content) + len(r.ToolCallID)
	case wire.Assistant:
		n := 0
		if r.Content != nil {
			n += len(*r.Content)
		}
		if r.ReasoningContent != nil {
			n += len(*r.ReasoningContent)
		}
		for _, c := range r.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
		return n
	}
	return 0
}

// bytesPerToken is how loopd turns text it has not sent yet into tokens.
// Three bytes per token is on the safe side for English and code.
const bytesPerToken = 3

// estimate is how many tokens the next request's prompt will hold with
// extra more bytes: from the last reply's timings (its prompt and predicted
// tokens, which the slot holds) plus what was written since, or from the
// epoch's size when no reply since loopd started has said.
func (st *epochState) estimate(extra int) uint64 {
	if st.context > 0 {
		return st.context + uint64((st.since+extra+bytesPerToken-1)/bytesPerToken)
	}
	return uint64((st.bytes() + extra + bytesPerToken - 1) / bytesPerToken)
}

// hasTurns reports whether the epoch holds any of the owner's messages:
// an epoch without them has nothing to summarise.
func (st *epochState) hasTurns() bool {
	return slices.ContainsFunc(st.records, func(r wire.LogRecord) bool { _, ok := r.(wire.User); return ok })
}
