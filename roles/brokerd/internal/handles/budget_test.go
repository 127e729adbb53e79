package handles

import (
	"testing"

	"boxmaker/wire"
)

// How many bits an answer type can carry, which the declassified budget
// counts.
func TestAnswerBits(t *testing.T) {
	for _, c := range []struct {
		answer wire.InspectAnswer
		bits   uint64
	}{
		{wire.AnswerBool{}, 1},
		{wire.AnswerEnum{Values: []string{"only"}}, 0},
		{wire.AnswerEnum{Values: []string{"a", "b", "c"}}, 2},
		{wire.AnswerEnum{Values: make([]string, 16)}, 4},
		{wire.AnswerInteger{Min: 1, Max: 5}, 3},
		{wire.AnswerInteger{Min: 0, Max: 1000}, 10},
		{wire.AnswerInteger{Min: -32768, Max: 32767}, 16},
	} {
		if got := AnswerBits(c.answer); got != c.bits {
			t.Errorf("AnswerBits(%#v) = %d, want %d", c.answer, got, c.bits)
		}
	}
}
