package bxctl

import (
	"context"
	"fmt"
	"io"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/termtext"
)

// modelStatus is the model server as status sees it.
type modelStatus struct {
	Upstream string `json:"upstream"` // the configured URL, or "scripted"
	Scripted bool   `json:"scripted"`
	Answers  bool   `json:"answers"`
	Error    string `json:"error,omitempty"` // why it does not answer
}

// checkModel asks the configured model server for /health, as up does at
// start; the scripted model answers whenever inferproxy runs.
// up records the upstream it started with (the environment may have
// chosen it); without that record, config.toml says.
func checkModel(ctx context.Context, paths config.Paths, st upState) modelStatus {
	if st.ScriptedModel {
		return modelStatus{Upstream: "scripted", Scripted: true, Answers: true}
	}
	m := modelStatus{Upstream: st.Upstream}
	if m.Upstream == "" {
		cfg, err := config.Load(paths.Config)
		if err != nil {
			return modelStatus{Error: err.Error()}
		}
		m.Upstream = cfg.Infer.Upstream
	}
	if m.Upstream == "" {
		m.Error = "no [infer] upstream in " + paths.Config
		return m
	}
	if err := modelAnswers(ctx, m.Upstream); err != nil {
		m.Error = err.Error()
		return m
	}
	m.Answers = true
	return m
}

func printModelLine(out io.Writer, m modelStatus) {
	switch {
	case m.Scripted:
		fmt.Fprintln(out, "model: the SCRIPTED MODEL (fixed replies, not a language model)")
	case m.Answers:
		fmt.Fprintf(out, "model: %s answers\n", termtext.Line(m.Upstream))
	case m.Upstream == "":
		fmt.Fprintf(out, "model: %s\n", termtext.Line(m.Error))
	default:
		fmt.Fprintf(out, "model: %s DOES NOT ANSWER (%s): every chat fails until it does\n", termtext.Line(m.Upstream), termtext.Line(m.Error))
	}
}

// statusOut is `status --json`.
type statusOut struct {
	Home       string       `json:"home"`
	Up         bool         `json:"up"`
	Supervisor int          `json:"supervisor"` // 0 when not up
	Roles      []roleOut    `json:"roles"`
	Model      *modelStatus `json:"model"` // null when not up
}

type roleOut struct {
	Role   string `json:"role"`
	State  string `json:"state"`
	PID    string `json:"pid"`
	UID    string `json:"uid"`
	Socket string `json:"socket"`
	Why    string `json:"why,omitempty"`
}

// statusJSON prints the status table's facts as JSON, with its exit status.
func statusJSON(ctx context.Context, out io.Writer, paths config.Paths, st upState, up bool) error {
	s := statusOut{Home: paths.Home, Up: up, Roles: []roleOut{}}
	if up {
		s.Supervisor = st.Supervisor
		m := checkModel(ctx, paths, st)
		s.Model = &m
	}
	down := 0
	for _, spec := range roles.Table {
		if !spec.Daemon {
			continue
		}
		r := roleState(spec.Name, st)
		if r.state != "running" && r.state != "not started" {
			down++
		}
		s.Roles = append(s.Roles, roleOut{Role: spec.Name, State: r.state, PID: r.pid, UID: r.uid, Socket: r.sock, Why: r.why})
	}
	if err := printJSON(out, s); err != nil {
		return err
	}
	return statusExit(up, down)
}
