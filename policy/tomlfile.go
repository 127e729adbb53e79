package policy

import (
	"bytes"
	"os"

	toml "github.com/pelletier/go-toml/v2"
)

// The owner's files (grants here, jobs in policy/jobs) are read one way:
// strict TOML, every problem with its line, files in the order of their
// stems. These are that way, for every parser of such a file.

// DecodeFile decodes data strictly into v: an unknown key, a type that
// does not fit and a syntax error are Problems with their lines; types
// says what each key holds, for the wording of a type that does not fit.
func DecodeFile(data []byte, v any, types map[string]string) []Problem {
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return tomlProblems(err, types)
	}
	return nil
}

// KeyProblem is a problem found once a file decoded, at the dotted key it
// concerns ("constraints.hosts", "examples[0]"), so that it gets a line.
type KeyProblem struct {
	Key  string
	Text string
}

// LineProblems gives each problem of found the line of its key in data,
// which DecodeFile accepted.
func LineProblems(data []byte, found []KeyProblem) []Problem {
	if len(found) == 0 {
		return nil
	}
	lines := keyLines(data)
	probs := make([]Problem, 0, len(found))
	for _, p := range found {
		probs = append(probs, Problem{Line: lines.of(p.Key), Reason: p.Text})
	}
	return probs
}

// FileNames lists the *.toml names among entries, sorted by their stems:
// the order grants and jobs are loaded, checked and shown in.
func FileNames(entries []os.DirEntry) []string { return tomlNames(entries) }
