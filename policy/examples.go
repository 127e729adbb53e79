package policy

import (
	"fmt"

	"boxmaker/wire"
)

// example is one [[examples]] entry: arguments the owner expects the grant's
// constraints to match, or not to match.
type example struct {
	Arguments string
	Matches   bool
}

// checkExamples proves that each example holds. Arguments that do not parse
// for the tool are an error too: they could match nothing, so they would
// prove nothing.
func checkExamples(tool wire.Tool, m matcher, examples []example) []problem {
	var probs []problem
	for i, ex := range examples {
		key := fmt.Sprintf("examples[%d]", i)
		args, err := tool.DecodeArgs(ex.Arguments)
		if err != nil {
			probs = append(probs, problem{key, fmt.Sprintf("example %d: %v", i+1, err)})
			continue
		}
		got, why := m.match(newSubject(args.Subject()))
		if got != ex.Matches {
			text := fmt.Sprintf("example %d does not hold: arguments %s %s the constraints (%s), but matches = %t",
				i+1, clip(ex.Arguments), matchWord(got), why, ex.Matches)
			probs = append(probs, problem{key, text})
		}
	}
	return probs
}

func matchWord(matched bool) string {
	if matched {
		return "match"
	}
	return "do not match"
}

// checkExampleFields requires both keys of every [[examples]] table.
func checkExampleFields(files []exampleFile) ([]example, []problem) {
	var examples []example
	var probs []problem
	for i, ef := range files {
		key := fmt.Sprintf("examples[%d]", i)
		if ef.Arguments == nil {
			probs = append(probs, problem{key, fmt.Sprintf("example %d: arguments is required", i+1)})
		}
		if ef.Matches == nil {
			probs = append(probs, problem{key, fmt.Sprintf("example %d: matches is required", i+1)})
		}
		if ef.Arguments != nil && ef.Matches != nil {
			examples = append(examples, example{Arguments: *ef.Arguments, Matches: *ef.Matches})
		}
	}
	return examples, probs
}
