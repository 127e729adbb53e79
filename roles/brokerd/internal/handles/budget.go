package handles

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"

	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// questionBudget is one session's inspect budget (issue 23): the questions
// each content has answered, by its hash, and the bits declassified
// answers have taken out of data above their class. It belongs to the
// data, not to a handle's name: reading the same note again gives a new
// handle with the same content and the same spent questions, and answers
// about many different secrets together take no more than
// inspect.max_declassified_bits. It is kept in the session's handle
// directory under a name no handle can have.
type questionBudget struct {
	Contents         []contentQuestions `json:"contents"`
	DeclassifiedBits uint64             `json:"declassified_bits"`
}

// contentQuestions is how many questions one content has answered.
type contentQuestions struct {
	Hash      string `json:"hash"` // SHA-256 of the content, hex
	Questions uint64 `json:"questions"`
}

// budgetFile is the budget's name in broker/handles/<session>/; it is not
// a handle name (wire.ValidHandleName), so usage and get never take it
// for one.
const budgetFile = "questions"

// question is one inspect call's demand on the budget: the contents it
// reads (the handle asked about and every handle in the question) and the
// bits its answer takes out when it is declassified, 0 when it keeps the
// class of what it read.
type question struct {
	hashes           []string
	declassifiedBits uint64
}

func contentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// AnswerBits is the most one answer of type a can say, in whole bits: the
// base-2 logarithm of how many values it may take, rounded up.
func AnswerBits(a wire.InspectAnswer) uint64 {
	var values uint64
	switch a := a.(type) {
	case wire.AnswerBool:
		values = 2
	case wire.AnswerEnum:
		values = uint64(len(a.Values))
	case wire.AnswerInteger:
		values = uint64(a.Max-a.Min) + 1 // wire bounds the range to wire.MaxIntegerValues
	default:
		return 64 // a type this does not know takes the whole budget, and more
	}
	if values <= 1 {
		return 0
	}
	return uint64(bits.Len64(values - 1))
}

// spend checks q against the budget and the limits and counts it, or says
// which bound it would pass, and the key that sets it, quoting nothing.
func (b *questionBudget) spend(q question, limits config.Inspect) error {
	if b.DeclassifiedBits+q.declassifiedBits > uint64(limits.MaxDeclassifiedBits) {
		return fmt.Errorf("%w: a declassified answer of this type takes %d bits, and the session has taken %d of its %d from data above the answer's class (inspect.max_declassified_bits)",
			ErrLimit, q.declassifiedBits, b.DeclassifiedBits, limits.MaxDeclassifiedBits)
	}
	for _, h := range q.hashes {
		if b.asked(h) >= uint64(limits.MaxQuestions) {
			return fmt.Errorf("%w: the content it reads has answered its %d questions in this session, whichever handle held it (inspect.max_questions)",
				ErrLimit, limits.MaxQuestions)
		}
	}
	for _, h := range q.hashes {
		b.count(h)
	}
	b.DeclassifiedBits += q.declassifiedBits
	return nil
}

func (b *questionBudget) asked(hash string) uint64 {
	for _, c := range b.Contents {
		if c.Hash == hash {
			return c.Questions
		}
	}
	return 0
}

func (b *questionBudget) count(hash string) {
	for i := range b.Contents {
		if b.Contents[i].Hash == hash {
			b.Contents[i].Questions++
			return
		}
	}
	b.Contents = append(b.Contents, contentQuestions{Hash: hash, Questions: 1})
}

// readBudget is the session's budget; a session that has asked nothing
// has an empty one.
func readBudget(dir string) (questionBudget, error) {
	data, err := os.ReadFile(filepath.Join(dir, budgetFile))
	if errors.Is(err, fs.ErrNotExist) {
		return questionBudget{Contents: []contentQuestions{}}, nil
	}
	if err != nil {
		return questionBudget{}, err
	}
	var b questionBudget
	if err := wire.Unmarshal(data, &b); err != nil {
		return questionBudget{}, fmt.Errorf("the question budget in %s does not parse: %v", dir, err)
	}
	return b, nil
}

func writeBudget(dir string, b questionBudget) error {
	data, err := wire.Marshal(&b)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, budgetFile), data, 0o600)
}
