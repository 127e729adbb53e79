package brokerd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/policy"
	"boxmaker/roles"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/roles/brokerd/internal/secrets"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// runner runs allowed calls in sandboxes.
type runner struct {
	log        *log.Logger
	cfg        config.Config
	paths      config.Paths
	executable string // the boxmaker binary the sandbox runs as toolkit
	egressSock string // run/brokerd-egressd/egress.sock
	notes      *notes.Store
	// slots holds one token per sandbox running now; its capacity is
	// broker.max_sandboxes, so a flood of calls cannot start unbounded
	// sandboxes (each may take its memory and process limits).
	slots chan struct{}
}

// outcome is what a run gave: the tool's content (ok or failed), the
// secrets that must be redacted from it, whether the sandbox ran at all
// (once it has, whatever comes back, even a failure's text, came out of it
// and taints the session like a result), and the join of the labels of the
// notes the sandbox could read, which the result and the session take on.
type outcome struct {
	output  toolrun.Output
	secrets []string
	ran     bool
	read    taintLabel
}

// run executes the call d allows, as who (for the labels of the notes it
// writes). d must be runnable (auto or approved): that check is the first
// thing it does, and nothing runs without it.
func (r *runner) run(ctx context.Context, d policy.Decision, who notes.Writer) (outcome, error) {
	g, err := d.Runnable()
	if err != nil {
		return outcome{}, err
	}
	call := d.Input()
	tool, _ := call.Tool() // a runnable Decision's call has its descriptor
	name := tool.Name
	if tool.InBroker {
		return outcome{}, fmt.Errorf("%s is answered by brokerd, never run in a sandbox", name)
	}
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	default:
		r.log.Printf("%s: not run: %d sandboxes are running already (broker.max_sandboxes)", name, cap(r.slots))
		return failedOutcome("%s: not run: brokerd is running %d tool sandboxes already (its limit); try again when one has finished", name, cap(r.slots)), nil
	}
	mounts, err := mountsFor(g, call, r.paths.Join("memory"), r.statePaths())
	if err != nil {
		return failedOutcome("%s: %v", name, err), nil
	}
	secret, err := r.secretOf(g)
	if err != nil {
		return outcome{}, err
	}
	spec, err := r.spec(call, mounts)
	if err != nil {
		return failedOutcome("%s: %v", name, err), nil
	}
	if spec.Job.Egress {
		f, err := r.openEgress(ctx, g, tool, spec.Job, secret)
		if err != nil {
			r.log.Printf("%s: egressd: %v", name, err)
			return failedOutcome("%s: the egress proxy is not available", name), nil
		}
		defer f.Close()
		spec.Egress = f
	}
	nc, err := r.notes.Begin(mounts, who)
	if err != nil {
		r.log.Printf("%s: %v", name, err)
		return failedOutcome("%s: not run: brokerd cannot label notes now", name), nil
	}
	res, err := sandbox.Run(ctx, spec)
	// Whatever became of the tool, what its sandbox wrote is labelled
	// before anything is answered.
	labelled, nerr := r.notes.Finish(nc)
	if nerr != nil {
		return outcome{}, nerr
	}
	read := labelOfNotes(labelled.Read)
	if labelled.Problem != nil {
		r.log.Printf("%s: %v", name, labelled.Problem)
		res.Output = toolrun.Output{OK: false, Content: fmt.Sprintf(
			"%s: brokerd could not label what the call wrote file by file (%v); the folder now carries the session's label", name, labelled.Problem)}
	}
	var fail *sandbox.Failure
	if res.Diagnostics != "" {
		r.log.Printf("%s: sandbox said: %s", name, strings.TrimSpace(res.Diagnostics))
	}
	switch {
	case errors.As(err, &fail):
		r.log.Printf("%s: %s", name, fail.Detail)
		o := failedOutcome("%s", fail.Detail)
		o.ran, o.secrets, o.read = true, nonEmpty(secret), read
		return o, nil
	case err != nil:
		// The sandbox never started (a mount it cannot take, bwrap not
		// there): nothing ran, and the reason is what the owner needs.
		r.log.Printf("%s: not run: %v", name, err)
		return failedOutcome("%s: not run: the sandbox cannot be set up: %v", name, err), nil
	}
	return outcome{output: res.Output, secrets: nonEmpty(secret), ran: true, read: read}, nil
}

// statePaths is what no sandbox may see: boxmaker's own state and config
// (run/, the role table's state directories but memory/, which the notes
// tools mount, and etc/), as real paths (mounts are compared by their real paths).
func (r *runner) statePaths() []string {
	var out []string
	state := []string{r.paths.Join("run")}
	for _, dir := range roles.Hidden() {
		state = append(state, r.paths.Join(dir))
	}
	state = append(state, r.paths.Grants, r.paths.Secrets, r.paths.Config)
	// Under systemd brokerd's copies of its secrets lie in its credentials
	// directory (/run/credentials/<unit>), which a file_read grant on /run
	// could otherwise bind into a sandbox.
	if creds := os.Getenv(config.CredentialsEnv); filepath.IsAbs(creds) {
		state = append(state, creds)
	}
	for _, p := range state {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		out = append(out, p)
	}
	return out
}

func failedOutcome(format string, args ...any) outcome {
	return outcome{output: toolrun.Output{OK: false, Content: fmt.Sprintf(format, args...)}}
}

// spec is the sandbox that runs call, which has its descriptor (a
// runnable Decision's Input does).
func (r *runner) spec(call wire.Call, mounts []sandbox.Mount) (sandbox.Spec, error) {
	tool, _ := call.Tool()
	needs := toolrun.NeedsFor(tool)
	sb := r.cfg.Sandbox
	job := toolrun.Job{
		Tool:      tool.Name,
		Arguments: call.Arguments(),
		Mounts:    sandbox.JobMounts(mounts),
		Limits: toolrun.Limits{
			CPUSeconds:  int64(sb.CPUSeconds),
			MemoryBytes: int64(sb.MemoryMB) << 20,
			OutputBytes: int64(sb.OutputBytes),
			Processes:   int64(sb.Processes),
			FileBytes:   int64(sb.OutputBytes),
		},
		Egress: needs.Egress,
	}
	if needs.System {
		job.System = &toolrun.System{Paths: sb.SystemPaths, ShellPath: sb.ShellPath}
	}
	if tool.Sandbox.Egress.To == wire.ConsultEndpoint {
		if r.cfg.Consult.URL == "" {
			return sandbox.Spec{}, errors.New("no [consult] url in config.toml")
		}
		job.Consult = &toolrun.Consult{URL: r.cfg.Consult.URL, Model: r.cfg.Consult.Model}
	}
	return sandbox.Spec{
		Bwrap:       sb.Bwrap,
		Executable:  r.executable,
		Mounts:      mounts,
		System:      needs.System,
		WallTime:    sb.WallTime.D(),
		OutputBytes: int64(sb.OutputBytes) + 4096, // room for the Output's own JSON
		Job:         job,
	}, nil
}

// openEgress asks egressd for a connection limited to what the tool's
// descriptor and the grant allow: its method, to the grant's hosts or the
// configured consult endpoint.
func (r *runner) openEgress(ctx context.Context, g policy.Grant, tool wire.Tool, job toolrun.Job, secret string) (*os.File, error) {
	hosts, err := egressHosts(tool.Sandbox.Egress.To, g, job)
	if err != nil {
		return nil, err
	}
	var auth *string
	if secret != "" {
		v := "Bearer " + secret
		auth = &v
	}
	return fdpass.OpenEgress(ctx, r.egressSock, hosts, tool.Sandbox.Egress.Method, auth)
}

// errNoEgressTarget is an egress target of the catalog that brokerd cannot
// connect; TestEveryEgressTargetIsConnected proves there is none.
var errNoEgressTarget = errors.New("brokerd cannot connect this egress target")

// egressHosts is the hosts entries egressd may reach for a job going to to.
func egressHosts(to wire.EgressTarget, g policy.Grant, job toolrun.Job) ([]string, error) {
	switch to {
	case wire.GrantHosts:
		return g.Constraints().Hosts, nil
	case wire.ConsultEndpoint:
		if job.Consult == nil {
			return nil, errors.New("the job has no consult endpoint")
		}
		entry, err := hostEntryOf(job.Consult.URL)
		if err != nil {
			return nil, err
		}
		return []string{entry}, nil
	}
	return nil, fmt.Errorf("%w (target %d)", errNoEgressTarget, to)
}

// hostEntryOf writes a URL's host as a grant hosts entry.
func hostEntryOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("[consult] url %q is not an http(s) URL", raw)
	}
	if u.Scheme == "http" {
		return "http://" + u.Host, nil
	}
	return u.Host, nil
}

// secretOf reads brokerd's copy of the grant's secret (secrets.Read says
// where it is). It stays in brokerd and egressd; the sandbox never gets it.
func (r *runner) secretOf(g policy.Grant) (string, error) {
	name, ok := g.Secret()
	if !ok {
		return "", nil
	}
	value, err := secrets.Read(r.paths, name)
	if err != nil {
		return "", fmt.Errorf("secret %s of grant %s: %w", name, g.ID(), err)
	}
	return value, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// resultOf labels a run's outcome from the grant: a Result, or Failed.
// Failure text came out of the sandbox too, so it is redacted and cut.
func resultOf(o outcome, g policy.Grant, maxBytes int) wire.ToolResponse {
	if !o.output.OK {
		msg, _ := truncate(redact(o.output.Content, o.secrets), maxBytes)
		return wire.Failed{Message: msg}
	}
	return label(o.output.Content, g, o.read, o.secrets, maxBytes)
}
