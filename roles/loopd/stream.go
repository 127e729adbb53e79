package loopd

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"boxmaker/wire"
)

// reply is one model answer as its stream delivered it.
type reply struct {
	content   strings.Builder
	reasoning strings.Builder
	calls     []*streamCall // by index
	finish    string        // stop, length or tool_calls; "" until the stream says
	timings   *timings      // from the last chunk
}

// streamCall is one tool call put together from its deltas: id and name
// once, argument fragments concatenated in order.
type streamCall struct {
	id, name  string
	args      strings.Builder
	fragments int // deltas that carried part of args (verify-device counts them)
}

// timings is the part of llama-server's timings loopd reads: the prompt
// tokens reused from the cache and evaluated, and the tokens predicted.
type timings struct {
	CacheN     uint64 `json:"cache_n"`
	PromptN    uint64 `json:"prompt_n"`
	PredictedN uint64 `json:"predicted_n"`
}

// prompt is the request's whole prompt, in tokens.
func (t timings) prompt() uint64 { return t.CacheN + t.PromptN }

// chunk is one chat.completion.chunk, or an error sent mid-stream.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          *string     `json:"content"`
			ReasoningContent *string     `json:"reasoning_content"`
			ToolCalls        []callDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Timings *timings  `json:"timings"`
	Error   *apiError `json:"error"`
}

type callDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

const (
	maxStreamLine = 16 << 20 // one event's line; a whole tool call can come in one
	maxToolCalls  = 64       // in one reply
)

// onText receives reasoning (reasoning true) or reply text as it streams.
type onText func(reasoning bool, text string)

// readStream reads a server-sent event stream to its end. It returns the
// reply once the stream said [DONE] or ended after a finish_reason; an error
// event, a chunk that is not JSON, or a stream that stops before its
// finish_reason is an error, and the reply must then be thrown away.
func readStream(body io.Reader, text onText) (*reply, error) {
	r := &reply{}
	br := bufio.NewReaderSize(body, 64<<10)
	var data []byte
	for {
		line, err := readLine(br)
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("the model's stream broke: %w", err)
		}
		switch {
		case len(line) == 0: // a blank line ends an event
			done, err := r.event(data, text)
			if err != nil || done {
				return r, err
			}
			data = data[:0]
		case line[0] == ':': // a comment: llama-server's keep-alive
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if done, err := r.event(data, text); err != nil || done {
		return r, err
	}
	if r.finish == "" {
		return nil, errors.New("the model's stream ended before the reply was complete")
	}
	return r, nil
}

// readLine returns one line without its end (\n or \r\n).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxStreamLine {
			return nil, fmt.Errorf("a stream line is longer than %d bytes", maxStreamLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		return line, err
	}
}

// event handles one event's data and reports whether the stream is done.
func (r *reply) event(data []byte, text onText) (bool, error) {
	if len(data) == 0 {
		return false, nil
	}
	if string(data) == "[DONE]" {
		if r.finish == "" {
			return true, errors.New("the model's stream said [DONE] before a finish_reason")
		}
		return true, nil
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return true, fmt.Errorf("the model's stream sent a chunk that is not JSON (%v): %s", err, shorten(string(data), 200))
	}
	if c.Error != nil {
		return true, fmt.Errorf("the model server failed mid-reply: %s (%s)", c.Error.Message, c.Error.Type)
	}
	if c.Timings != nil {
		r.timings = c.Timings
	}
	for _, ch := range c.Choices {
		if err := r.delta(ch.Delta.Content, ch.Delta.ReasoningContent, ch.Delta.ToolCalls, text); err != nil {
			return true, err
		}
		if ch.FinishReason != nil {
			r.finish = *ch.FinishReason
		}
	}
	return false, nil
}

func (r *reply) delta(content, reasoning *string, calls []callDelta, text onText) error {
	if reasoning != nil && *reasoning != "" {
		r.reasoning.WriteString(*reasoning)
		text(true, *reasoning)
	}
	if content != nil && *content != "" {
		r.content.WriteString(*content)
		text(false, *content)
	}
	for _, d := range calls {
		if d.Index < 0 || d.Index >= maxToolCalls {
			return fmt.Errorf("the model's stream sent tool call index %d", d.Index)
		}
		for len(r.calls) <= d.Index {
			r.calls = append(r.calls, &streamCall{})
		}
		c := r.calls[d.Index]
		if c.id == "" {
			c.id = d.ID
		}
		c.name += d.Function.Name
		if d.Function.Arguments != "" {
			c.args.WriteString(d.Function.Arguments)
			c.fragments++
		}
	}
	return nil
}

// assistant is the reply as the log keeps it and the next request replays
// it: content null when it is empty beside tool calls (as llama-server
// writes a whole message), reasoning null when there was none.
func (r *reply) assistant(now wire.Timestamp) (wire.Assistant, error) {
	a := wire.Assistant{Time: now, ToolCalls: []wire.ToolCall{}}
	for i, c := range r.calls {
		if c.name == "" {
			return a, fmt.Errorf("the model's tool call %d has no name", i)
		}
		id := c.id
		if id == "" {
			id = newCallID()
		}
		a.ToolCalls = append(a.ToolCalls, wire.ToolCall{ID: id, Name: c.name, Arguments: c.args.String()})
	}
	if len(a.ToolCalls) > 0 && r.finish == "length" {
		return a, errors.New("the model's reply was cut off (finish_reason length) inside a tool call")
	}
	if s := r.content.String(); s != "" || len(a.ToolCalls) == 0 {
		a.Content = &s
	}
	if s := r.reasoning.String(); s != "" {
		a.ReasoningContent = &s
	}
	return a, nil
}

// newCallID makes an id for a tool call the server sent without one: nine
// alphanumerics, which both llama.cpp's templates and Mistral's accept.
func newCallID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 9)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
