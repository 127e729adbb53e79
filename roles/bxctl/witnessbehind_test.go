package bxctl

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// auditHome is a home whose audit log brokerd's key checkpoints, and whose
// witness/ holds what witnessd would: every checkpoint brokerd signed.
type auditHome struct {
	t      *testing.T
	paths  config.Paths
	signer note.Signer
	v      note.Verifiers
	vkey   string
	cosign ed25519.PrivateKey
	call   wire.CallID
}

func newAuditHome(t *testing.T, cfg string) *auditHome {
	skey, vkey, _ := note.GenerateKey(nil, "boxmaker-audit")
	signer, _ := note.NewSigner(skey)
	v, _ := note.NewVerifier(vkey)
	h := &auditHome{t: t, paths: config.Paths{Home: t.TempDir()}, signer: signer, v: note.VerifierList(v), vkey: vkey}
	h.paths.Config = h.paths.Join("etc", "config.toml")
	for _, dir := range []string{"audit", "witness", "etc"} {
		if err := os.MkdirAll(h.paths.Join(dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(h.paths.Config, []byte(cfg), 0o600)
	os.WriteFile(h.paths.Join("audit", audit.VerifierKeyName), []byte(vkey+"\n"), 0o600)
	os.WriteFile(h.paths.Join("witness", audit.WitnessKeyName), []byte(vkey+"\n"), 0o600)
	pub, priv, _ := ed25519.GenerateKey(nil)
	os.WriteFile(h.paths.Join("witness", audit.WitnessCosignKeyName), []byte(audit.CosignVerifierKey("test/boxmaker-witness", pub)+"\n"), 0o600)
	h.cosign = priv
	return h
}

// appendAt writes n records at time at; signing, brokerd signs a checkpoint
// of them at the close, which reaches the witness. Not signing is a brokerd
// that has stopped signing: the log grows, no checkpoint follows.
func (h *auditHome) appendAt(at time.Time, n int, signing bool) {
	h.t.Helper()
	opts := []audit.Option{audit.WithClock(func() time.Time { return at })}
	if signing {
		opts = append(opts, audit.WithCheckpoints(audit.CheckpointConfig{Signer: h.signer, Verifier: h.v,
			Origin: "test/boxmaker-audit", Records: 1000, Interval: time.Hour}))
	}
	w, err := audit.Open(h.paths.Join("audit"), opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	session, _ := wire.ParseSessionID("chat-1")
	for range n {
		h.call++
		if _, err := w.Append(wire.AuditRecord{Session: session, Call: h.call, Tool: "http_fetch", Arguments: `{"url":"https://example.org/"}`,
			SessionTaint: wire.Private, Decision: wire.DecisionAllowed{Grant: "fetch-docs"}}); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		h.t.Fatal(err)
	}
	cps, err := audit.ReadCheckpoints(h.paths.Join("audit"), h.v)
	if err != nil {
		h.t.Fatal(err)
	}
	var data []byte // what witnessd keeps: each note cosigned, here with the time to the millisecond
	for _, cp := range cps {
		cosigner, _ := audit.NewCosigner("test/boxmaker-witness", h.cosign, cp.Time.Time)
		cosigned, err := audit.Cosign([]byte(cp.Note()), h.v, cosigner)
		if err != nil {
			h.t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{"note": string(cosigned), "time": cp.Time})
		data = append(append(data, line...), '\n')
	}
	os.WriteFile(h.paths.Join("witness", audit.CheckpointsName), data, 0o600)
}

// The attack of issue 23, finding 7: brokerd stops signing checkpoints
// while the log grows. brokerd's checkpoints and the witness's agree, so a
// status that compared only those two said "up to date" and verify passed.
// status and verify compare the witness's newest with the log's head: past
// it by more than twice the checkpoint interval, in records or in the age
// of the oldest record no checkpoint covers, is reported, and verify fails
// naming the seqs and the age; a log within the interval passes.
func TestAWitnessBehindTheLogIsReported(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name, config string
		unsigned     int
		at           time.Duration // before now
		behind       string        // "" for a witness that keeps up
	}{
		{"within the interval", "", 3, 5 * time.Second, ""},
		{"stopped signing, by time", "", 3, 10 * time.Minute, "seq 6, 3 records past the witness's newest checkpoint (seq 3, signed 20m0s ago), and the oldest of them was written 10m0s ago"},
		{"stopped signing, by records", "[audit]\ncheckpoint_records = 2\n", 5, 5 * time.Second, "seq 8, 5 records past the witness's newest checkpoint (seq 3,"},
		{"within the records", "[audit]\ncheckpoint_records = 2\n", 4, 5 * time.Second, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newAuditHome(t, c.config)
			h.appendAt(now.Add(-20*time.Minute), 3, true)
			h.appendAt(now.Add(-c.at), c.unsigned, false)
			cfg, err := config.Load(h.paths.Config)
			if err != nil {
				t.Fatal(err)
			}
			line := witnessLine(h.paths, cfg.Audit, now)
			code, out, errOut := run(t, "audit", "verify", "--home", h.paths.Home)
			fcode, _, ferrOut := run(t, "audit", "verify", "--from-checkpoint", "--home", h.paths.Home)
			if c.behind == "" {
				if !strings.HasPrefix(line, "audit witness: up to date at seq 3") || code != 0 || fcode != 0 {
					t.Fatalf("status %q, verify exit %d %s%s, --from-checkpoint exit %d %s; want up to date, exit 0", line, code, out, errOut, fcode, ferrOut)
				}
				return
			}
			if !strings.HasPrefix(line, "audit witness: BEHIND THE LOG: the log's head is "+c.behind) {
				t.Errorf("status: %q\nwant it to say %q", line, c.behind)
			}
			if _, out, _ := run(t, "status", "--home", h.paths.Home); !strings.Contains(out, "audit witness: BEHIND THE LOG: the log's head is "+c.behind) {
				t.Errorf("boxmaker status does not say the witness is behind:\n%s", out)
			}
			snapshot := t.TempDir() // the witness's copy as it was, kept elsewhere
			copyWitness(t, h.paths.Join("witness"), snapshot)
			if code, out, errOut := run(t, "audit", "verify", "--home", h.paths.Home, "--witness", snapshot); code != 0 {
				t.Errorf("verify against a copy of the witness kept elsewhere: exit %d %s%s; want 0, a copy is older by nature", code, out, errOut)
			}
			for _, got := range []struct {
				code   int
				errOut string
			}{{code, errOut}, {fcode, ferrOut}} {
				if got.code != 1 || !strings.Contains(got.errOut, "the audit witness is behind the log: the log's head is "+c.behind) {
					t.Errorf("verify: exit %d, stderr %q; want exit 1 saying %q", got.code, got.errOut, c.behind)
				}
			}
		})
	}
}

func copyWitness(t *testing.T, from, to string) {
	t.Helper()
	for _, name := range []string{audit.WitnessKeyName, audit.WitnessCosignKeyName, audit.CheckpointsName} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(to, name), data, 0o600)
	}
}

// Under systemd, where the production home runs, status says it too.
func TestStatusUnderSystemdShowsAWitnessBehindTheLog(t *testing.T) {
	h := newAuditHome(t, "")
	h.appendAt(time.Now().Add(-20*time.Minute), 3, true)
	h.appendAt(time.Now().Add(-10*time.Minute), 3, false)
	var blocks []string
	for _, spec := range roles.Table {
		if spec.Daemon {
			blocks = append(blocks, unitBlock(spec.Name, h.paths.Home, "active", "running", os.Getpid()))
		}
	}
	fakeSystemctl(t, append(blocks, targetBlock("active"))...)
	_, out, _ := run(t, "status", "--home", h.paths.Home)
	if !strings.Contains(out, "boxmaker runs under systemd") || !strings.Contains(out, "audit witness: BEHIND THE LOG: the log's head is seq 6, 3 records past") {
		t.Errorf("status under systemd does not say the witness is behind:\n%s", out)
	}
}
