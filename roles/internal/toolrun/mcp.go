package toolrun

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"boxmaker/wire"
)

// An MCP instance (DESIGN.md section 16) is a sandbox that lives for many
// calls, so its descriptors differ from a one-shot tool run's:
//
//	0  frames from brokerd (wire/mcp.go), until brokerd closes it
//	1  frames to brokerd
//	2  diagnostics for brokerd's log, one sanitized line each
//	3  the MCPJob, encoded, then end of file
//	4  for a remote server (URL set) only: its channel to egressd, on
//	   which toolkit sends one end of a fresh socketpair per HTTP
//	   connection (SCM_RIGHTS); a remote instance has no mounts
//
// MCPTool is the name toolkit is started with: `boxmaker toolkit mcp`.
const (
	MCPTool      = "mcp"
	MCPJobFD     = 3
	MCPChannelFD = 4
)

// MCPHome and MCPTmp are the server's private HOME and TMPDIR, on the
// sandbox's own /tmp, unless its env sets them.
const (
	MCPHome = "/tmp/home"
	MCPTmp  = "/tmp"
)

// MCPJob is what one MCP instance runs: the server of [mcp.NAME] with its
// mounts (ro and rw, at their own paths) beside the shell tool's base.
type MCPJob struct {
	Server  wire.McpServer `json:"server"`
	Command []string       `json:"command"` // a local server's argv; empty for a remote one
	// URL is a remote server's endpoint, reached only through the channel
	// on MCPChannelFD; the secret is egressd's and never here.
	URL    string    `json:"url"`
	Env    []string  `json:"env"` // the whole environment, NAME=value
	Mounts []Mount   `json:"mounts"`
	System System    `json:"system"`
	Limits MCPLimits `json:"limits"`
}

// MCPLimits bound an instance. Memory and processes hold for its life;
// CallMillis and ResultBytes for each call.
type MCPLimits struct {
	MemoryBytes  int64 `json:"memory_bytes"` // RLIMIT_DATA of the server
	Processes    int64 `json:"processes"`    // RLIMIT_NPROC; threads count too
	FileBytes    int64 `json:"file_bytes"`   // the largest file it may write
	CallMillis   int64 `json:"call_millis"`  // one call's wall time
	StartMillis  int64 `json:"start_millis"` // the server's start and handshake
	ResultBytes  int64 `json:"result_bytes"` // a result's text is cut here
	MaxLineBytes int64 `json:"max_line_bytes"`
}

// CallTime and StartTime are the limits as durations.
func (l MCPLimits) CallTime() time.Duration  { return time.Duration(l.CallMillis) * time.Millisecond }
func (l MCPLimits) StartTime() time.Duration { return time.Duration(l.StartMillis) * time.Millisecond }

// EncodeMCPJob validates j and encodes it canonically.
func EncodeMCPJob(j MCPJob) ([]byte, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	data, err := wire.Marshal(&j)
	if err == nil && len(data) > MaxJobBytes {
		return nil, fmt.Errorf("mcp job: %d bytes, over the %d toolkit reads", len(data), MaxJobBytes)
	}
	return data, err
}

// DecodeMCPJob decodes data strictly and validates the job.
func DecodeMCPJob(data []byte) (MCPJob, error) {
	var j MCPJob
	if err := wire.Unmarshal(data, &j); err != nil {
		return MCPJob{}, fmt.Errorf("mcp job: %w", err)
	}
	return j, j.Validate()
}

// Validate reports why j cannot run, or nil.
func (j MCPJob) Validate() error {
	if err := wire.CheckMcpServer(string(j.Server)); err != nil {
		return fmt.Errorf("mcp job: %w", err)
	}
	switch {
	case j.URL != "" && (len(j.Command) > 0 || len(j.Env) > 0 || len(j.Mounts) > 0):
		return errors.New("mcp job: a remote server (url) has no command, env or mounts")
	case j.URL == "" && (len(j.Command) == 0 || !path.IsAbs(j.Command[0])):
		return errors.New("mcp job: the command must start with an absolute path")
	case j.URL != "":
		if err := wire.McpURL(j.URL).Check(); err != nil {
			return fmt.Errorf("mcp job: %w", err)
		}
	}
	for _, e := range j.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.ContainsRune(e, 0) {
			return fmt.Errorf("mcp job: env entry %q is not NAME=value", e)
		}
	}
	l := j.Limits
	for _, v := range []int64{l.MemoryBytes, l.Processes, l.FileBytes, l.CallMillis, l.StartMillis, l.ResultBytes, l.MaxLineBytes} {
		if v <= 0 {
			return errors.New("mcp job: every limit must be positive")
		}
	}
	if err := j.System.validate(j.Mounts); err != nil {
		return fmt.Errorf("mcp job: %w", err)
	}
	return validateMounts(j.Mounts, true)
}
