package toolrun

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"boxmaker/wire"
)

// Descriptors of a sandboxed tool run, fixed so that neither side guesses:
//
//	0  the Job, encoded, then end of file          (brokerd -> toolkit)
//	1  one Output, encoded, nothing after it        (toolkit -> brokerd)
//	2  diagnostics for brokerd's log, never trusted (toolkit -> brokerd)
//	3  a connected socket to egressd, present only when Job.Egress is set;
//	   the tool writes one HTTP request in absolute form and reads the reply
//
// No other descriptor is open in the sandbox.
const (
	JobFD         = 0
	OutputFD      = 1
	DiagnosticsFD = 2
	EgressFD      = 3
)

// MaxJobBytes bounds the encoded Job toolkit reads before it stops. A frame
// is at most 1 MiB, and the arguments, JSON text carried as a string, can
// nearly double when escaped again; the rest of a Job is small.
const MaxJobBytes = 4 << 20

// ExecutablePath is where the boxmaker executable is mounted in the sandbox.
const ExecutablePath = "/boxmaker"

// MemoryDir is where the entries of memory/ are mounted in the sandbox:
// memory/<entry> on the host is MemoryDir/<entry> inside.
const MemoryDir = "/memory"

// MinLandlockABI is the oldest Landlock ABI toolkit accepts. Version 1
// (Linux 5.13) already confines every file access; later versions add
// rights (reparenting, truncation, TCP, ioctl, scopes) that toolkit uses
// when the kernel has them, but never silently goes without version 1.
const MinLandlockABI = 1

// Job is what one sandboxed run must do.
type Job struct {
	Tool      string   `json:"tool"`
	Arguments string   `json:"arguments"` // the model's JSON text, decoded by toolkit
	Mounts    []Mount  `json:"mounts"`
	Limits    Limits   `json:"limits"`
	Egress    bool     `json:"egress"` // fd 3 is a connection to egressd
	Consult   *Consult `json:"consult"`
	System    *System  `json:"system"` // exactly for a tool that runs /bin/sh
}

// Mount is one granted path as the tool sees it.
type Mount struct {
	Path     string `json:"path"` // absolute, inside the sandbox
	Writable bool   `json:"writable"`
}

// Limits bound the run. toolkit applies them to itself before any work.
type Limits struct {
	CPUSeconds  int64 `json:"cpu_seconds"`
	MemoryBytes int64 `json:"memory_bytes"`
	OutputBytes int64 `json:"output_bytes"` // the encoded Output must fit
	Processes   int64 `json:"processes"`    // threads count too
	FileBytes   int64 `json:"file_bytes"`   // the largest file the tool may write
}

// Consult is the hosted model that a tool whose egress goes to the consult
// endpoint asks (consult). The credential is not here: egressd adds it to
// the request outside the sandbox.
type Consult struct {
	URL   string `json:"url"`
	Model string `json:"model"`
}

// Output is the tool's one answer. When OK is false, Content says why.
type Output struct {
	OK      bool   `json:"ok"`
	Content string `json:"content"`
}

// Needs says what a tool's sandbox must provide beyond the granted paths.
type Needs struct {
	System bool // /usr and the merged-usr links, to run /bin/sh
	Egress bool // fd 3, a connection to egressd
}

// NeedsOf reports what tool's sandbox must provide, as its catalog row
// says; a tool outside the catalog needs nothing (and Validate refuses it).
func NeedsOf(tool string) Needs {
	t, _ := wire.ToolByName(tool)
	return NeedsFor(t)
}

// NeedsFor reports what the sandbox of the tool t describes must provide,
// for a caller that holds the descriptor already (brokerd's wire.Call).
func NeedsFor(t wire.Tool) Needs {
	return Needs{System: t.Sandbox.System, Egress: t.Sandbox.Egress.Needed()}
}

// EncodeJob validates j and encodes it canonically.
func EncodeJob(j Job) ([]byte, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	data, err := wire.Marshal(&j)
	if err == nil && len(data) > MaxJobBytes {
		return nil, fmt.Errorf("job: %d bytes, over the %d toolkit reads", len(data), MaxJobBytes)
	}
	return data, err
}

// DecodeJob decodes data strictly and validates the Job.
func DecodeJob(data []byte) (Job, error) {
	var j Job
	if err := wire.Unmarshal(data, &j); err != nil {
		return Job{}, fmt.Errorf("job: %w", err)
	}
	return j, j.Validate()
}

// EncodeOutput encodes o canonically.
func EncodeOutput(o Output) ([]byte, error) { return wire.Marshal(&o) }

// DecodeOutput decodes data strictly: one Output and nothing else.
func DecodeOutput(data []byte) (Output, error) {
	var o Output
	if err := wire.Unmarshal(data, &o); err != nil {
		return Output{}, fmt.Errorf("output: %w", err)
	}
	return o, nil
}

// Validate reports why j cannot run, or nil.
func (j Job) Validate() error {
	tool, ok := wire.ToolByName(j.Tool)
	if !ok {
		return fmt.Errorf("job: no tool named %q", j.Tool)
	}
	needs := NeedsOf(j.Tool)
	if j.Egress != needs.Egress {
		return fmt.Errorf("job: %s must have egress=%v", j.Tool, needs.Egress)
	}
	if (j.Consult != nil) != (tool.Sandbox.Egress.To == wire.ConsultEndpoint) {
		return fmt.Errorf("job: %s: consult settings go with egress to the consult endpoint, and only with it", j.Tool)
	}
	if j.Consult != nil {
		if err := j.Consult.validate(); err != nil {
			return err
		}
	}
	if err := j.Limits.validate(); err != nil {
		return err
	}
	if (j.System != nil) != needs.System {
		return fmt.Errorf("job: %s: system settings go with a tool that runs /bin/sh, and only with it", j.Tool)
	}
	if j.System != nil {
		if err := j.System.validate(j.Mounts); err != nil {
			return fmt.Errorf("job: %w", err)
		}
	}
	return validateMounts(j.Mounts, needs.System)
}

func (l Limits) validate() error {
	for _, v := range []int64{l.CPUSeconds, l.MemoryBytes, l.OutputBytes, l.Processes, l.FileBytes} {
		if v <= 0 {
			return errors.New("job: every limit must be positive")
		}
	}
	return nil
}

func (c Consult) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return fmt.Errorf("job: consult url %q is not an http(s) URL", c.URL)
	}
	if c.Model == "" {
		return errors.New("job: consult model is empty")
	}
	return nil
}

// reserved are the sandbox's own paths; a grant may not be mounted on or
// under them, since that would hide or replace what toolkit relies on.
var reserved = []string{ExecutablePath, "/proc", "/dev", "/tmp"}

// systemPaths are reserved as well when the tool runs /bin/sh.
var systemPaths = []string{"/usr", "/bin", "/lib", "/lib64", "/sbin"}

func validateMounts(mounts []Mount, system bool) error {
	seen := map[string]bool{}
	for _, m := range mounts {
		if !path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path || m.Path == "/" {
			return fmt.Errorf("job: mount %q must be a clean absolute path below /", m.Path)
		}
		if seen[m.Path] {
			return fmt.Errorf("job: mount %q appears twice", m.Path)
		}
		seen[m.Path] = true
		if r, ok := reservedBy(m.Path, system); ok {
			return fmt.Errorf("job: mount %q would cover the sandbox's own %s", m.Path, r)
		}
	}
	return nil
}

// reservedBy names the reserved path that p is or lies below.
func reservedBy(p string, system bool) (string, bool) {
	all := reserved
	if system {
		all = slices.Concat(reserved, systemPaths)
	}
	for _, r := range all {
		if p == r || strings.HasPrefix(p, r+"/") {
			return r, true
		}
	}
	return "", false
}
