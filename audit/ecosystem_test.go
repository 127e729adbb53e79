package audit

import (
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	tlogformat "github.com/transparency-dev/formats/log"
	tdnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// The checkpoints, proofs and cosignatures are checked here with the
// ecosystem's own code, not ours: transparency-dev/formats parses the
// checkpoints and checks cosignatures, transparency-dev/merkle checks the
// inclusion and consistency proofs, and torchwood (the library behind
// filippo.io's witness and tlog tools) parses checkpoints and makes and
// reads cosignatures.

const ecoOrigin = "eco-test/boxmaker-audit"

// ecoLog is a log of n records, checkpointed every 10 and at its close.
func ecoLog(t *testing.T, n int) (dir, vkey string, w *Writer, cps []Checkpoint) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, ecoOrigin)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	v, _ := note.NewVerifier(vkey)
	c := &checkpointed{dir: t.TempDir(), cfg: CheckpointConfig{Signer: s, Verifier: note.VerifierList(v), Origin: ecoOrigin,
		Records: 10, Interval: time.Hour, Mirror: filepath.Join(t.TempDir(), "checkpoint.last")}}
	w = c.mustOpen(t)
	appendN(t, w, n)
	if err := w.Close(); err != nil { // signs the head, n
		t.Fatal(err)
	}
	return c.dir, vkey, w, c.checkpoints(t)
}

func TestCheckpointsParseWithTheEcosystem(t *testing.T) {
	_, vkey, _, cps := ecoLog(t, 37)
	if len(cps) < 3 {
		t.Fatalf("%d checkpoints, want one every 10 records", len(cps))
	}
	v, err := tdnote.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		parsed, _, _, err := tlogformat.ParseCheckpoint([]byte(cp.Note()), ecoOrigin, v)
		if err != nil {
			t.Fatalf("transparency-dev/formats refuses the checkpoint of size %d: %v\n%s", cp.Seq, err, cp.Note())
		}
		if parsed.Size != cp.Seq || string(parsed.Hash) != string(cp.Root[:]) || parsed.Origin != ecoOrigin {
			t.Errorf("formats reads %+v, want size %d root %x", parsed, cp.Seq, cp.Root)
		}
		body, _, _ := strings.Cut(cp.Note(), "\n\n")
		tw, err := torchwood.ParseCheckpoint(body + "\n")
		if err != nil || tw.N != int64(cp.Seq) || tw.Hash != [32]byte(cp.Root) || tw.Extension != "" {
			t.Errorf("torchwood reads %+v, %v; want size %d, no extension lines", tw, err, cp.Seq)
		}
	}
}

func TestProofsCheckWithTransparencyDevMerkle(t *testing.T) {
	dir, _, w, cps := ecoLog(t, 37)
	newest := cps[len(cps)-1]
	h := rfc6962.DefaultHasher
	for _, seq := range []uint64{1, 2, 7, 16, 17, newest.Seq} {
		p, err := Prove(dir, seq, newest)
		if err != nil {
			t.Fatalf("Prove(%d): %v", seq, err)
		}
		if leaf := h.HashLeaf(p.Line); string(leaf) != string(p.Leaf[:]) {
			t.Fatalf("the leaf hash of record %d is not RFC 6962's", seq)
		}
		if err := proof.VerifyInclusion(h, p.Index, p.Size, p.Leaf[:], hashBytes(p.Hashes), newest.Root[:]); err != nil {
			t.Errorf("transparency-dev/merkle refuses the inclusion proof of record %d: %v", seq, err)
		}
	}
	for _, old := range cps[:len(cps)-1] {
		p, err := w.ConsistencyProof(old.Seq, newest.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(h, old.Seq, newest.Seq, hashBytes(p), old.Root[:], newest.Root[:]); err != nil {
			t.Errorf("transparency-dev/merkle refuses the consistency proof %d to %d: %v", old.Seq, newest.Seq, err)
		}
		if err := CheckConsistent(dir, old, newest); err != nil {
			t.Errorf("CheckConsistent(%d, %d): %v", old.Seq, newest.Seq, err)
		}
	}
	forged := cps[0]
	forged.Root[0] ^= 1
	if err := CheckConsistent(dir, forged, newest); err == nil {
		t.Errorf("CheckConsistent takes a root the log never had")
	}
}

func TestCosignaturesAgreeWithTheEcosystem(t *testing.T) {
	_, vkey, _, cps := ecoLog(t, 12)
	pub, priv, _ := ed25519.GenerateKey(nil)
	const name = "eco-test/boxmaker-witness"
	ours, err := NewCosigner(name, priv, func() time.Time { return time.Unix(1790000000, 0) })
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := torchwood.NewCosignatureSigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := CosignVerifierKey(name, pub), theirs.Verifier().String(); got != want {
		t.Fatalf("our cosignature verifier key %s, torchwood's %s", got, want)
	}
	bv, _ := note.NewVerifier(vkey)
	brokerd := note.VerifierList(bv)
	cosigned, err := Cosign([]byte(cps[0].Note()), brokerd, ours)
	if err != nil {
		t.Fatal(err)
	}
	fv, err := tdnote.NewVerifierForCosignatureV1(CosignVerifierKey(name, pub))
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cosigned, note.VerifierList(fv, bv))
	if err != nil || len(n.Sigs) != 2 {
		t.Fatalf("formats' cosignature verifier: %v (%d signatures checked)", err, len(n.Sigs))
	}
	for _, s := range n.Sigs {
		if s.Name == name {
			when, err := tdnote.CoSigV1Timestamp(s)
			if err != nil || when.Unix() != 1790000000 {
				t.Errorf("formats reads the cosignature's time as %v, %v", when, err)
			}
		}
	}
	if _, err := note.Open(cosigned, note.VerifierList(theirs.Verifier())); err != nil {
		t.Errorf("torchwood's cosignature verifier refuses ours: %v", err)
	}
	byTorchwood, err := note.Sign(&note.Note{Text: n.Text}, theirs)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := NewCosignVerifier(CosignVerifierKey(name, pub))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(byTorchwood, note.VerifierList(cv)); err != nil {
		t.Errorf("our cosignature verifier refuses torchwood's: %v", err)
	}
	size := "\n" + strconv.FormatUint(cps[0].Seq, 10) + "\n"
	tampered := strings.Replace(string(cosigned), size, "\n99\n", 1)
	if tampered == string(cosigned) {
		t.Fatal("no size line to change")
	}
	if _, err := note.Open([]byte(tampered), note.VerifierList(cv)); err == nil {
		t.Errorf("our cosignature verifier takes a changed body")
	}
}

// The wire fixture's consistency proof is one transparency-dev/merkle
// takes, from the tree of the first 3 records of fixtures/audit/chain to
// the tree of all 5, whose root the fixture's note signs.
func TestWireFixtureProofIsReal(t *testing.T) {
	var leaves [][]byte
	for _, f := range []string{"2026-09-17.jsonl", "2026-09-18.jsonl"} {
		b, err := os.ReadFile(filepath.Join(fixtureDir, "chain", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			leaves = append(leaves, rfc6962.DefaultHasher.HashLeaf([]byte(l)))
		}
	}
	var c3, c5 compactTree
	for i, l := range leaves {
		if i < 3 {
			c3.add([32]byte(l))
		}
		c5.add([32]byte(l))
	}
	proofLines := []string{"b0TP8H0g2ScaTmcpbvPw7enbnVyWCPNrd6ttitV0AS0=", "8JBML+fLjFR0Ox92/hlQiCYZqG5F3Yn9XotvOuaKGvI=",
		"1Xh5/neGdPwO3hAIXDCtFCYguGCMz5pZaARs1XzfxLw=", "mCCMltAgjafSZICRLqGb/qmXEY2Ika/5EvBO7tEOmDM="}
	data, err := os.ReadFile("../fixtures/wire/valid/checkpoint_add.json")
	if err != nil {
		t.Fatal(err)
	}
	var p [][]byte
	for _, l := range proofLines {
		if !strings.Contains(string(data), l) {
			t.Fatalf("the fixture does not hold proof line %s", l)
		}
		b, _ := base64.StdEncoding.DecodeString(l)
		p = append(p, b)
	}
	r3, r5 := c3.root(), c5.root()
	if !strings.Contains(string(data), base64.StdEncoding.EncodeToString(r5[:])) {
		t.Fatalf("the fixture's note does not sign the root of the 5 records")
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 3, 5, p, r3[:], r5[:]); err != nil {
		t.Fatalf("transparency-dev/merkle refuses the fixture's proof: %v", err)
	}
}

func hashBytes[H ~[32]byte](hs []H) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}
