package brokerd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"sync"

	"boxmaker/wire"
)

// answer is the owner's word on one approval.
type answer struct {
	approve  bool
	approver string  // local:<user> or mm:<user id>
	post     *string // the Mattermost post, when answered there
}

// approvals are the ask decisions waiting for the owner. Each is answered at
// most once: the first answer wins, later ones find it gone.
type approvals struct {
	mu      sync.Mutex
	pending map[string]*pending
	limit   int // broker.max_pending_approvals
}

type pending struct {
	info   wire.Approval
	answer chan answer // buffered: one answer, never blocks the answerer
}

func newApprovals(limit int) *approvals {
	return &approvals{pending: map[string]*pending{}, limit: limit}
}

// errTooManyApprovals is answered to a call that would wait past the bound:
// a flood of asks must not bury the owner's list or brokerd's memory.
var errTooManyApprovals = errors.New("too many approvals are waiting for the owner")

// add registers info (its Approval id is filled in) and returns it with the
// channel its answer will come on, or errTooManyApprovals past the limit.
func (a *approvals) add(info wire.Approval) (wire.Approval, <-chan answer, error) {
	info.Approval = newApprovalID()
	p := &pending{info: info, answer: make(chan answer, 1)}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) >= a.limit {
		return wire.Approval{}, nil, errTooManyApprovals
	}
	a.pending[info.Approval] = p
	return info, p.answer, nil
}

// remove forgets an approval that expired or whose caller left.
func (a *approvals) remove(id string) {
	a.mu.Lock()
	delete(a.pending, id)
	a.mu.Unlock()
}

// answer delivers ans to the approval id and reports whether it was pending.
func (a *approvals) answer(id string, ans answer) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.pending[id]
	delete(a.pending, id)
	if ok {
		p.answer <- ans // buffered for one, and only the first answer finds it
	}
	return ok
}

// list returns the pending approvals, oldest expiry first.
func (a *approvals) list() []wire.Approval {
	a.mu.Lock()
	out := make([]wire.Approval, 0, len(a.pending))
	for _, p := range a.pending {
		out = append(out, p.info)
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Expires != out[j].Expires {
			return out[i].Expires < out[j].Expires
		}
		return out[i].Approval < out[j].Approval
	})
	return out
}

// newApprovalID is random, so that nobody can answer an approval they were
// not shown by guessing its id.
func newApprovalID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "ap-" + hex.EncodeToString(b[:])
}
