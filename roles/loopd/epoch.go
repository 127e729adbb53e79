package loopd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"boxmaker/wire"
)

// ready returns the session's epoch for a turn: as this process left it,
// rebuilt from the log on the session's first turn since start, or made
// new for a session that does not exist yet.
func (l *loopd) ready(ctx context.Context, ss *session) (*epochState, error) {
	if ss.state != nil {
		return ss.state, nil
	}
	var st *epochState
	_, _, created, err := l.store.lookup(ss.id)
	if err != nil {
		return nil, clientError{err.Error()}
	}
	if created {
		st, err = l.resume(ctx, ss)
	} else {
		st, err = l.create(ctx, ss)
	}
	if err != nil {
		return nil, err
	}
	ss.state = st
	return st, nil
}

// create starts a session: its directory, a slot, and epoch 1.
func (l *loopd) create(ctx context.Context, ss *session) (*epochState, error) {
	props, err := l.infer.serverProps(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(ss.dir, 0o700); err != nil {
		return nil, err
	}
	if err := syncDir(l.store.dir); err != nil {
		return nil, err
	}
	slot := l.store.chooseSlot(ss, props.Slots, l.inspect)
	st, err := l.startEpoch(ctx, ss, 1, slot, "", 1)
	if err != nil {
		return nil, err
	}
	l.log.Printf("session %s started on slot %d", ss.id, slot)
	return st, nil
}

// startEpoch fixes an epoch's prompt (memory/core.md as it is now, the
// summary that ends the previous epoch, brokerd's tool list) and opens its
// file with SessionStart.
func (l *loopd) startEpoch(ctx context.Context, ss *session, epoch wire.Epoch, slot uint32, summary string, nextCall wire.CallID) (*epochState, error) {
	specs, err := l.toolList(ctx, ss.id)
	if err != nil {
		return nil, err
	}
	p := prompt{System: l.core(), Summary: summary, Tools: specs}
	baseline, err := savePrompt(ss.dir, epoch, p)
	if err != nil {
		return nil, err
	}
	if err := clearUnfinished(epochFile(ss.dir, epoch)); err != nil {
		return nil, err
	}
	now := l.now()
	start := wire.SessionStart{Time: now, Session: ss.id, Epoch: epoch, Slot: slot, Baseline: baseline}
	lg, err := createEpoch(ss.dir, start)
	if err != nil {
		return nil, err
	}
	l.store.update(ss, func(i *wire.SessionInfo) { i.Session, i.Epoch, i.Updated = ss.id, epoch, now })
	return &epochState{log: lg, epoch: epoch, slot: slot, prompt: p, records: []wire.LogRecord{start}, nextCall: nextCall}, nil
}

// core is memory/core.md, the owner's standing instructions; a missing
// file is an empty prompt, said in the log.
func (l *loopd) core() string {
	data, err := os.ReadFile(l.paths.Join("memory", "core.md"))
	if err != nil {
		l.log.Printf("no system prompt: %v", err)
		return ""
	}
	return string(data)
}

// clearUnfinished removes an epoch file that a crash left without a single
// whole line (it was being created); any file with a whole line is kept
// and creating over it fails.
func clearUnfinished(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || bytes.IndexByte(data, '\n') >= 0 {
		return err
	}
	return os.Remove(path)
}

// resume rebuilds a session from its log: the latest epoch's records, its
// prompt (checked against the baseline) and the next call id, with a step
// a crash left unfinished cut off and the calls a stopped turn left
// unanswered given a result. A log that ends in EpochEnd was compacting
// when loopd stopped: the next epoch is begun from its summary.
func (l *loopd) resume(ctx context.Context, ss *session) (*epochState, error) {
	sc, err := scanSession(ss.dir, ss.id)
	if err != nil {
		return nil, err
	}
	records, size := l.cutUnfinished(ss, sc)
	lg, err := openEpoch(epochFile(ss.dir, sc.epoch), size)
	if err != nil {
		return nil, err
	}
	p, err := loadPrompt(ss.dir, sc.epoch, sc.start.Baseline)
	if err != nil {
		lg.close()
		return nil, err
	}
	st := &epochState{log: lg, epoch: sc.epoch, slot: sc.start.Slot, prompt: p, records: records, nextCall: sc.maxCall + 1}
	if end, ok := st.records[len(st.records)-1].(wire.EpochEnd); ok {
		lg.close()
		return l.startEpoch(ctx, ss, end.Next, st.slot, end.Summary, st.nextCall)
	}
	if err := l.repair(ss, st); err != nil {
		lg.close()
		return nil, err
	}
	return st, nil
}

// cutUnfinished returns the latest epoch's records that form whole steps,
// and the file size that holds just them: a crash during a write leaves a
// torn line, or whole lines of a step without its end, and both go.
func (l *loopd) cutUnfinished(ss *session, sc sessionScan) ([]wire.LogRecord, int64) {
	r := sc.latest
	keep := wholeSteps(r.records)
	size := r.ends[keep-1]
	if cut := r.size + int64(r.torn) - size; cut > 0 {
		l.log.Printf("session %s: cutting %d bytes of a step a crash left unfinished (%d whole records, a torn line of %d bytes) from %s",
			ss.id, cut, len(r.records)-keep, r.torn, epochFile(ss.dir, sc.epoch))
	}
	var users uint64
	for _, rec := range r.records[keep:] {
		if _, ok := rec.(wire.User); ok {
			users++
		}
	}
	l.store.update(ss, func(i *wire.SessionInfo) { i.Turns -= min(users, i.Turns) })
	return r.records[:keep], size
}

// repair answers the calls a stopped turn left without a result, so that
// every replayed tool call has its tool message.
func (l *loopd) repair(ss *session, st *epochState) error {
	calls := unanswered(st.records)
	if len(calls) == 0 {
		return nil
	}
	var recs []wire.LogRecord
	for _, c := range calls {
		recs = append(recs, interrupted(l.now(), st.nextCall, c))
		st.nextCall++
	}
	l.log.Printf("session %s: %d call(s) of a stopped turn had no result; recorded them as failed", ss.id, len(calls))
	return l.write(ss, st, recs...)
}

// write appends records to the epoch and makes them durable.
func (l *loopd) write(ss *session, st *epochState, recs ...wire.LogRecord) error {
	for _, r := range recs {
		if err := st.log.add(r); err != nil {
			st.log.discard()
			return err
		}
	}
	if err := st.log.flush(); err != nil {
		return err
	}
	st.records = append(st.records, recs...)
	var users uint64
	var latest wire.Timestamp
	for _, r := range recs {
		if _, ok := r.(wire.User); ok {
			users++
		}
		latest = max(latest, wire.RecordTime(r))
	}
	l.store.update(ss, func(i *wire.SessionInfo) { i.Turns += users; i.Updated = max(i.Updated, latest) })
	return nil
}

// drop forgets the session's in-memory epoch, so that its next turn
// rebuilds it from the log (and repairs what a failed turn left).
func (ss *session) drop() {
	if ss.state != nil {
		ss.state.log.close()
		ss.state = nil
	}
}

// maybeCompact starts the next epoch when the turn's prompt, with extra
// bytes of the owner's message, would pass loop.compact_at of the model's
// context.
func (l *loopd) maybeCompact(ctx context.Context, ss *session, st *epochState, extra int) (*epochState, error) {
	props, err := l.infer.serverProps(ctx)
	if err != nil {
		return nil, err
	}
	limit := uint64(l.cfg.CompactAt * float64(props.NCtx))
	if !st.hasTurns() || st.estimate(extra) <= limit {
		return st, nil
	}
	l.log.Printf("session %s epoch %d: about %d tokens, past %d of %d; compacting", ss.id, st.epoch, st.estimate(extra), limit, props.NCtx)
	summary, loss, err := l.summarise(ctx, st)
	if contextExceeded(err) {
		// The epoch no longer fits the context even to be summarised (a
		// large tool result, say): without this the session is stuck.
		l.log.Printf("session %s epoch %d is too long to summarise; the next epoch starts without its content", ss.id, st.epoch)
		summary, loss, err = fmt.Sprintf(unsummarised, st.epoch, ss.id, st.epoch), nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session %s is near the model's context limit and could not be summarised: %w", ss.id, err)
	}
	recs := append(loss, wire.EpochEnd{Time: l.now(), Next: st.epoch + 1, Summary: summary})
	if err := l.write(ss, st, recs...); err != nil {
		return nil, err
	}
	ss.drop()
	next, err := l.startEpoch(ctx, ss, st.epoch+1, st.slot, summary, st.nextCall)
	if err != nil {
		return nil, err
	}
	ss.state = next
	return next, nil
}

// summaryRequest is the message that asks for an epoch's summary. It is
// sent after the epoch's messages, so the server reuses their cache, and is
// never written to the log: EpochEnd keeps the answer.
const summaryRequest = "The conversation is about to be shortened. Write a summary of it for yourself to continue from: " +
	"what the owner asked for, what you found and did (with the tool results that still matter), and what is still open. " +
	"Reply with the summary only."

// unsummarised stands in for a summary the model could not write.
const unsummarised = "(Epoch %d of this conversation grew too long to be summarised, so it is left out; " +
	"the owner can read it in sessions/%s/%d.jsonl.)"

func contextExceeded(err error) bool {
	var ue *upstreamError
	return errors.As(err, &ue) && ue.Type == "exceed_context_size_error"
}

// summarise asks the model for the summary, on the session's slot with the
// epoch's prefix. loss is a CacheLoss record if the request showed one.
func (l *loopd) summarise(ctx context.Context, st *epochState) (string, []wire.LogRecord, error) {
	req, err := l.request(ctx, st, wire.User{Content: summaryRequest})
	if err != nil {
		return "", nil, err
	}
	req.ToolChoice, req.MaxTokens = "none", l.cfg.SummaryTokens
	body, err := encodeRequest(req)
	if err != nil {
		return "", nil, err
	}
	r, err := l.complete(ctx, body, func(bool, string) {})
	if err != nil {
		return "", nil, err
	}
	summary := r.content.String()
	if summary == "" {
		return "", nil, errors.New("the model's summary was empty")
	}
	return summary, l.checkCache(st, r.timings), nil
}
