package loopd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"boxmaker/wire"
)

// verifyChecks are verify-device's checks, in order: later ones use what
// earlier ones learnt (the server's props, the ten turns' epoch).
var verifyChecks = []verifyCheck{
	{"props", false, (*verifier).checkProps},
	{"slots", true, (*verifier).checkSlots},
	{"streaming", true, (*verifier).checkStreaming},
	{"reasoning", true, (*verifier).checkReasoning},
	{"tool-call", true, (*verifier).checkToolCall},
	{"cache-10-turns", true, (*verifier).checkCache},
	{"compaction", true, (*verifier).checkCompaction},
	{"error-body", true, (*verifier).checkErrorBody},
	{"context-overflow", true, (*verifier).checkContextOverflow},
}

// verifySystem is the system prompt of every check's epoch.
const verifySystem = "You are being tested by boxmaker's verify-device. Think briefly, and answer in one short sentence."

// verifyTokens caps each reply, reasoning included, unless --max-tokens
// says otherwise.
const verifyTokens = 2048

// verifyTool is the tool the tool-call check offers.
var verifyTool = wire.ToolSpec{
	Name:        "get_weather",
	Description: "The current weather in a city.",
	Parameters:  `{"type":"object","properties":{"city":{"type":"string","description":"the city's name"}},"required":["city"]}`,
}

// turnReply is one answer and what the checks read of it.
type turnReply struct {
	reply                      *reply
	assistant                  wire.Assistant
	contentDeltas, reasonDelta int
	prevPrompt, prevContext    uint64           // the epoch's previous prompt, and it with its reply, in tokens; 0 at first
	loss                       []wire.LogRecord // the CacheLoss loopd would log
}

// newEpoch is an epoch as loopd starts one, kept in memory only, on slot 0.
func (v *verifier) newEpoch(p prompt) *epochState {
	return &epochState{epoch: 1, prompt: p, records: []wire.LogRecord{wire.SessionStart{Time: v.l.now(), Epoch: 1}}, nextCall: 1}
}

// ask is one model request as a loopd turn makes it: the epoch replayed
// with more records after it, streamed, checked for cache loss, and the
// reply added to the epoch.
func (v *verifier) ask(ctx context.Context, st *epochState, toolChoice string, more ...wire.LogRecord) (*turnReply, error) {
	req, err := v.l.request(ctx, st, more...)
	if err != nil {
		return nil, err
	}
	req.ToolChoice, req.MaxTokens = toolChoice, v.maxTokens
	if toolChoice == "required" {
		// The tool-call check wants one call, and says so: llama-server's
		// grammar for parallel calls lets a model that never ends its turn
		// (Gemma 3 270M) write the call again until max_tokens.
		one := false
		req.ParallelToolCalls = &one
	}
	body, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	t := &turnReply{prevPrompt: st.lastPrompt, prevContext: st.context}
	r, err := v.l.complete(ctx, body, func(reasoning bool, _ string) {
		if reasoning {
			t.reasonDelta++
		} else {
			t.contentDeltas++
		}
	})
	if err != nil {
		return nil, err
	}
	if t.assistant, err = r.assistant(v.l.now()); err != nil {
		return nil, err
	}
	t.reply, t.loss = r, v.l.checkCache(st, r.timings)
	st.records = append(append(st.records, more...), t.assistant)
	return t, nil
}

func (v *verifier) checkProps(ctx context.Context) (string, error) {
	p, err := v.l.infer.serverProps(ctx)
	if err != nil {
		return "", err
	}
	v.props = &p
	var about struct {
		BuildInfo  string `json:"build_info"`
		ModelAlias string `json:"model_alias"`
	}
	_ = v.l.infer.getJSON(ctx, "/props", &about) // only for the line below
	return fmt.Sprintf("n_ctx %d, %d slot(s), build %q, model %q", p.NCtx, p.Slots, about.BuildInfo, about.ModelAlias), nil
}

func (v *verifier) checkSlots(ctx context.Context) (string, error) {
	var slots []struct {
		ID   *int   `json:"id"`
		NCtx uint64 `json:"n_ctx"`
	}
	if err := v.l.infer.getJSON(ctx, "/slots", &slots); err != nil {
		return "", err
	}
	if len(slots) != int(v.props.Slots) {
		return "", fmt.Errorf("/slots lists %d slot(s), /props total_slots %d", len(slots), v.props.Slots)
	}
	for i, s := range slots {
		if s.ID == nil || *s.ID != i {
			return "", fmt.Errorf("/slots entry %d has id %v, want %d", i, s.ID, i)
		}
		if s.NCtx != v.props.NCtx {
			return "", fmt.Errorf("slot %d has n_ctx %d, /props %d", i, s.NCtx, v.props.NCtx)
		}
	}
	return fmt.Sprintf("%d slot(s), ids 0 to %d, n_ctx %d each", len(slots), len(slots)-1, v.props.NCtx), nil
}

func (v *verifier) checkStreaming(ctx context.Context) (string, error) {
	t, err := v.ask(ctx, v.newEpoch(prompt{System: verifySystem}), "", wire.User{Content: "Say hello and name one colour."})
	if err != nil {
		return "", err
	}
	v.streamed = t
	switch r := t.reply; {
	case t.contentDeltas < 2:
		return "", fmt.Errorf("the reply came in %d content delta(s), not streamed token by token", t.contentDeltas)
	case r.finish != "stop":
		return "", fmt.Errorf("finish_reason %q, want stop", r.finish)
	case r.timings == nil:
		return "", errors.New("no chunk carried timings, which loopd reads to check the cache")
	}
	return fmt.Sprintf("%d content deltas, finish stop, prompt %d tokens: %s",
		t.contentDeltas, t.reply.timings.prompt(), quote(t.reply.content.String())), nil
}

func (v *verifier) checkReasoning(context.Context) (string, error) {
	t := v.streamed
	switch {
	case t == nil:
		return "", errors.New("not run: the streaming turn failed")
	case t.reasonDelta == 0:
		return "", errors.New("no reasoning_content arrived: serve a reasoning model, with --reasoning-format auto or deepseek")
	}
	return fmt.Sprintf("%d reasoning deltas, kept apart from the content: %s", t.reasonDelta, quote(t.reply.reasoning.String())), nil
}

func (v *verifier) checkToolCall(ctx context.Context) (string, error) {
	st := v.newEpoch(prompt{System: verifySystem, Tools: []wire.ToolSpec{verifyTool}})
	t, err := v.ask(ctx, st, "required", wire.User{Content: "What is the weather in Paris? Use get_weather."})
	if err != nil {
		return "", err
	}
	if n := len(t.reply.calls); n != 1 || t.reply.finish != "tool_calls" {
		return "", fmt.Errorf("%d tool call(s) with finish_reason %q, want one and tool_calls; content %s", n, t.reply.finish, quote(t.reply.content.String()))
	}
	c := t.reply.calls[0]
	var args struct {
		City *string `json:"city"`
	}
	switch {
	case c.name != verifyTool.Name:
		return "", fmt.Errorf("the call is to %q, want %s", c.name, verifyTool.Name)
	case !validArguments(c.args.String()) || json.Unmarshal([]byte(c.args.String()), &args) != nil || args.City == nil:
		return "", fmt.Errorf("arguments %s are not an object with a city", quote(c.args.String()))
	case c.fragments < 2:
		return "", fmt.Errorf("the arguments came in %d fragment(s); loopd must be shown them streamed in pieces", c.fragments)
	}
	// The result goes back as loopd sends it; the call is replayed byte for byte.
	call := t.assistant.ToolCalls[0]
	res := wire.ToolResult{Time: v.l.now(), Call: 1, ToolCallID: call.ID, Content: `{"city":"Paris","sky":"clear","celsius":21}`}
	after, err := v.ask(ctx, st, "none", res)
	if err != nil {
		return "", fmt.Errorf("after the tool result: %w", err)
	}
	if after.reply.content.Len() == 0 {
		return "", errors.New("after the tool result the model answered no text")
	}
	if len(after.loss) > 0 {
		return "", fmt.Errorf("replaying the call lost the cache: %s", lossText(after.loss))
	}
	return fmt.Sprintf("%s%s in %d fragments, id %q; after the result: %s",
		c.name, c.args.String(), c.fragments, call.ID, quote(after.reply.content.String())), nil
}

// checkCache runs ten turns in one epoch: from the second on, the server
// must reuse at least the previous prompt, so that loopd logs no CacheLoss.
func (v *verifier) checkCache(ctx context.Context) (string, error) {
	st := v.newEpoch(prompt{System: verifySystem})
	var figures []string
	for i := 1; i <= 10; i++ {
		msg := fmt.Sprintf("Turn %d of 10: what is %d plus %d? One short sentence.", i, i, i)
		t, err := v.ask(ctx, st, "", wire.User{Content: msg})
		if err != nil {
			return "", fmt.Errorf("turn %d: %w", i, err)
		}
		tm := t.reply.timings
		switch {
		case tm == nil:
			return "", fmt.Errorf("turn %d: no timings", i)
		case len(t.loss) > 0:
			return "", fmt.Errorf("turn %d: loopd would log a cache loss (%s); so far %s", i, lossText(t.loss), strings.Join(figures, " "))
		case i > 1 && tm.CacheN < t.prevPrompt:
			return "", fmt.Errorf("turn %d: cache_n %d is below the previous prompt's %d tokens", i, tm.CacheN, t.prevPrompt)
		}
		if i > 1 {
			figures = append(figures, fmt.Sprintf("%d(%d+%d)", tm.CacheN, t.prevPrompt, t.prevContext-t.prevPrompt))
		}
	}
	v.tenTurns = st
	return "no CacheLoss: turns 2-10 reused at least the previous prompt; cache_n(previous prompt+its reply): " + strings.Join(figures, " "), nil
}

// checkCompaction summarises the ten turns' epoch as loopd does when a
// session nears n_ctx, then starts the next epoch from the summary.
func (v *verifier) checkCompaction(ctx context.Context) (string, error) {
	if v.tenTurns == nil {
		return "", errors.New("not run: the ten turns failed")
	}
	summary, loss, err := v.l.summarise(ctx, v.tenTurns)
	if err != nil {
		return "", err
	}
	if len(loss) > 0 {
		return "", fmt.Errorf("the summary request lost the epoch's cache: %s", lossText(loss))
	}
	t, err := v.ask(ctx, v.newEpoch(prompt{System: verifySystem, Summary: summary}), "", wire.User{Content: "What did we talk about?"})
	if err != nil {
		return "", fmt.Errorf("the next epoch: %w", err)
	}
	if t.reply.content.Len() == 0 {
		return "", errors.New("the next epoch's first turn answered no text")
	}
	return fmt.Sprintf("summary of %d bytes %s; the next epoch answers %s", len(summary), quote(summary), quote(t.reply.content.String())), nil
}

// checkErrorBody sends a request llama-server refuses: the error must come
// as {"error":{code,message,type}} with the code as the HTTP status.
func (v *verifier) checkErrorBody(ctx context.Context) (string, error) {
	hi := "hi"
	ue, err := v.refused(ctx, chatRequest{Messages: []chatMessage{{Role: "user", Content: &hi}}, ToolChoice: "no-such-choice"})
	if err != nil {
		return "", err
	}
	if ue.Status != 400 || ue.Type != "invalid_request_error" || ue.Message == "" {
		return "", fmt.Errorf("want 400 invalid_request_error with a message, got %v", ue)
	}
	return ue.Error(), nil
}

// checkContextOverflow sends a prompt longer than n_ctx: loopd recognises
// the answer (exceed_context_size_error) to compact a session that
// outgrew the context.
func (v *verifier) checkContextOverflow(ctx context.Context) (string, error) {
	// " a" is at least one token in any tokenizer.
	long := strings.Repeat(" a", int(min(v.props.NCtx, 1<<24))+64)
	ue, err := v.refused(ctx, chatRequest{Messages: []chatMessage{{Role: "user", Content: &long}}, MaxTokens: 1})
	if err != nil {
		return "", err
	}
	if !contextExceeded(ue) || ue.Status != 400 {
		return "", fmt.Errorf("want 400 exceed_context_size_error, got %v", ue)
	}
	return ue.Error(), nil
}

// refused posts req, streaming and on slot 0, and returns the error the
// server answered; a request that is not refused is an error here.
func (v *verifier) refused(ctx context.Context, req chatRequest) (*upstreamError, error) {
	req.Stream, req.CachePrompt = true, true
	body, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	stream, err := v.l.infer.chat(ctx, body)
	if err == nil {
		stream.Close()
		return nil, errors.New("the server accepted the request")
	}
	var ue *upstreamError
	if !errors.As(err, &ue) {
		return nil, err
	}
	return ue, nil
}

func lossText(recs []wire.LogRecord) string {
	var parts []string
	for _, r := range recs {
		if l, ok := r.(wire.CacheLoss); ok {
			parts = append(parts, fmt.Sprintf("reused %d prompt tokens, expected %d", l.Got, l.Expected))
		}
	}
	return strings.Join(parts, "; ")
}
