package loopd

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// llama-server renders the chat template and tokenizes the whole prompt with
// special tokens parsed (handle_completions_impl calls tokenize_input_prompts
// with parse_special true), and llama.cpp's tokenizer cuts special tokens out
// wherever their exact text stands (tokenizer_st_partition). So a page, a
// note or a message that holds "<|im_end|>\n<|im_start|>system" closes its
// turn there and opens a system turn of its own. loopd therefore neutralises
// the model's turn markers in every text it sends: it puts a zero-width
// joiner (U+200D) after a marker's first character. The marker's exact text
// is then gone, so the tokenizer cannot find it, and since every token is a
// piece of the text, no merge can make it again; the text still reads the
// same to the model and to the owner (whose terminal shows the joiner
// escaped), and removing the joiner gives the original back.
const joiner = "\u200d"

// genericMarkers are the shapes of most templates' special tokens, whatever
// the model: <|im_start|>, <|eot_id|>, <|channel|> (pipes, ChatML, Llama 3,
// Phi, gpt-oss, Command R, Granite), <|turn> and <turn|> (half pipes), and
// DeepSeek's <｜User｜> with full-width bars. No class takes the joiner, so
// a neutralised marker never matches again.
const genericMarkers = `<\|[^<>|\s\x{200d}]{1,64}\|?>|<[^<>|\s\x{200d}]{1,64}\|>|<｜[^<>｜\s\x{200d}]{1,64}｜>`

// commonMarkers are the special tokens of common templates that have no
// pipes, neutralised whether or not the server's template names them: a
// template may build a marker from pieces (Phi-3 writes '<|' + role + '|>'),
// and a server may not report its template at all.
var commonMarkers = []string{
	// Llama 2, Mistral, and SentencePiece models generally.
	"<s>", "</s>",
	// Gemma.
	"<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>",
	// Qwen, Hermes and DeepSeek R1 tool and reasoning tags.
	"<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	// Mistral.
	"[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
	"[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CONTENT]", "[THINK]", "[/THINK]",
	// GLM.
	"[gMASK]", "<sop>", "<eop>",
}

// templateMarkers find the markers a chat template writes out that have no
// pipes: tags such as <start_of_turn> and </tool_call>, and bracketed
// upper-case words such as [INST].
var templateMarkers = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`</?[A-Za-z_][A-Za-z0-9_.:\-]{0,63}>|\[/?[A-Z][A-Z_]{1,63}\]`)
})

// turnMarkers is what loopd neutralises in the text it sends the model.
type turnMarkers struct {
	re *regexp.Regexp
}

// newTurnMarkers makes the set for a server: the generic shapes, the common
// markers, the markers its chat templates write, and its BOS and EOS tokens.
func newTurnMarkers(templates []string, tokens ...string) *turnMarkers {
	literal := slices.Clone(commonMarkers)
	for _, t := range templates {
		literal = append(literal, templateMarkers().FindAllString(t, -1)...)
	}
	literal = append(literal, tokens...)
	literal = slices.DeleteFunc(literal, func(s string) bool {
		// One character cannot be cut; a joiner would let the set match
		// its own output.
		return utf8.RuneCountInString(s) < 2 || strings.Contains(s, joiner) || !utf8.ValidString(s)
	})
	slices.Sort(literal)
	literal = slices.Compact(literal)
	parts := []string{genericMarkers}
	for _, s := range literal {
		parts = append(parts, regexp.QuoteMeta(s))
	}
	return &turnMarkers{re: regexp.MustCompile(strings.Join(parts, "|"))}
}

// has reports whether s holds a marker.
func (m *turnMarkers) has(s string) bool { return m.re.MatchString(s) }

// neutralise puts a joiner after the first character of every marker in s.
// Markers that overlap are cut one after another until none is left.
func (m *turnMarkers) neutralise(s string) string {
	for m.re.MatchString(s) {
		s = m.re.ReplaceAllStringFunc(s, func(marker string) string {
			_, n := utf8.DecodeRuneInString(marker)
			return marker[:n] + joiner + marker[n:]
		})
	}
	return s
}

// neutraliseArguments is neutralise for a tool call's arguments, a JSON
// object: the server parses them and the template writes them out again,
// so a marker hidden by an escape ("\u003c|im_end|>") would come back. The
// strings are read decoded; arguments without a marker in them are
// returned byte for byte, others encoded again with every string
// neutralised. Arguments that are not valid JSON are returned as they are.
func (m *turnMarkers) neutraliseArguments(args string) string {
	dec := jsontext.NewDecoder(strings.NewReader(args))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	changed := false
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return args
		}
		if tok.Kind() == '"' && m.has(tok.String()) {
			tok, changed = jsontext.String(m.neutralise(tok.String())), true
		}
		if err := enc.WriteToken(tok); err != nil {
			return args
		}
	}
	if !changed {
		return args
	}
	return strings.TrimSuffix(out.String(), "\n")
}
