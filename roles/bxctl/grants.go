package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func grantsCommand() *cli.Command {
	return &cli.Command{
		Name:  "grants",
		Usage: "check the owner's grant files, and explain what they decide",
		Commands: []*cli.Command{{
			Name:      "check",
			Usage:     "report every error of every grant file, then list the valid grants",
			ArgsUsage: "[DIR]",
			Flags:     withJSON("an object: errors (each file's error, as text), grants (id, tool, mode, max_taint, result_class, untrusted, when_untrusted, expires, constraints, jobs)"),
			Action:    checkGrants,
		}, {
			Name:      "explain",
			Usage:     "print the decision brokerd would make for one call, and why; exit 1 when it is denied (0 for auto and ask)",
			ArgsUsage: "TOOL ARGUMENTS",
			Flags: append(homeFlags(),
				&cli.StringFlag{Name: "grants", Usage: "the grants directory (default: the configured one)"},
				&cli.StringFlag{Name: "taint", Value: "private", Usage: "the session's taint: public, private or secret"},
				&cli.BoolFlag{Name: "untrusted", Usage: "decide for a session that has read untrusted data, where when_untrusted applies"},
				&cli.StringFlag{Name: "job", Usage: "decide in a run of this job, where grants with jobs naming it apply (default: a session that is no job's)"},
				&cli.StringFlag{Name: "at", Usage: "decide at this time, YYYY-MM-DDTHH:MM:SS.mmmZ or RFC 3339 (default: now)"},
				jsonFlag("an object: decision (auto, ask or denied), reason (for denied), grant (or null), steps (the explanation's lines)"),
			),
			Action: explainGrant,
		}},
	}
}

func checkGrants(_ context.Context, cmd *cli.Command) error {
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	dir, err := dirArg(cmd, paths.Grants)
	if err != nil {
		return err
	}
	grants, bad, err := policy.LoadDir(dir)
	if err != nil {
		return err
	}
	jobs, err := checkJobs(dir, grants)
	if err != nil {
		return err
	}
	out := cmd.Root().Writer
	bad = append(bad, mcpChecks(cmd, dir, grants)...) // grantsmcp.go
	errs := slices.Concat(bad, jobs.bad, jobs.dangling, jobs.delivery)
	if cmd.Bool("json") {
		if err := printJSON(out, grantsJSON(errs, grants)); err != nil {
			return err
		}
	} else {
		writeGrantCheck(out, errs, grants, jobs)
	}
	if len(bad) > 0 || jobs.problems() > 0 {
		return jobs.summary(len(bad), len(grants))
	}
	return nil
}

func writeGrantCheck(out io.Writer, errs []error, grants []policy.Grant, jobs jobCheck) {
	for _, e := range errs {
		fmt.Fprintln(out, e)
	}
	if len(errs) > 0 {
		fmt.Fprintln(out)
	}
	writeGrantTable(out, grants)
	writeJobTable(out, jobs.jobs)
}

func writeGrantTable(out io.Writer, grants []policy.Grant) {
	if len(grants) == 0 {
		fmt.Fprintln(out, "no valid grants")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTOOL\tMODE\tMAX_TAINT\tRESULT_CLASS\tUNTRUSTED\tWHEN_UNTRUSTED\tEXPIRES\tCONSTRAINTS\tJOBS")
	for _, g := range grants {
		expires := "never"
		if ts, ok := g.Expires(); ok {
			expires = ts.String()
		}
		whenUntrusted := g.WhenUntrusted().String()
		if whenUntrusted == "" {
			whenUntrusted = "-"
		}
		jobs := "-"
		if ids := g.Jobs(); ids != nil {
			jobs = strings.Join(ids, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\t%s\n", g.ID(), g.Tool(), g.Mode(), g.MaxTaint(),
			resultText(g), g.Untrusted(), whenUntrusted, expires, grantConstraintText(g), jobs)
	}
	tw.Flush()
}

// resultText is the class of a grant's results, and what becomes of them
// when it is not plain content (DESIGN.md section 15): "secret(handle)",
// or for an inspect grant "public(declassify)".
func resultText(g policy.Grant) string {
	switch {
	case g.ResultIsHandle():
		return g.ResultClass().String() + "(handle)"
	case g.Declassify():
		return g.ResultClass().String() + "(declassify)"
	}
	return g.ResultClass().String()
}

func constraintText(c policy.Constraints) string {
	var parts []string
	for _, dim := range []struct {
		name   string
		values []string
	}{{"hosts", c.Hosts}, {"paths", c.Paths}, {"patterns", c.Patterns}} {
		if len(dim.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s=%q", dim.name, dim.values))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func explainGrant(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 2 {
		return usagef("grants explain takes TOOL and ARGUMENTS (a JSON object), e.g. http_fetch '{\"url\":\"https://example.org/\"}'")
	}
	req, err := explainRequest(cmd)
	if err != nil {
		return err
	}
	dir := cmd.String("grants")
	if dir == "" {
		paths, err := pathsOf(cmd)
		if err != nil {
			return err
		}
		dir = paths.Grants
	}
	grants, bad, err := policy.LoadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range bad {
		fmt.Fprintf(cmd.Root().ErrWriter, "ignored, as brokerd would: %v\n", e)
	}
	// Grants with jobs apply only in runs of those jobs (DESIGN.md section 13).
	d, err := decideForExplain(cmd, dir, policy.GrantsForJob(grants, cmd.String("job")), req)
	if err != nil {
		return err
	}
	if cmd.Bool("json") {
		err = printJSON(cmd.Root().Writer, explanationJSON(d))
	} else {
		writeExplanation(cmd.Root().Writer, d)
	}
	if err == nil && d.Outcome() == policy.Denied {
		return errQuiet // the decision line says so; a script reads the status
	}
	return err
}

func explainRequest(cmd *cli.Command) (policy.Request, error) {
	taint, err := wire.ParseDataClass(cmd.String("taint"))
	if err != nil {
		return policy.Request{}, usagef("--taint: %v", err)
	}
	now, err := parseAt(cmd.String("at"))
	if err != nil {
		return policy.Request{}, usagef("--at: %v", err)
	}
	tool := cmd.Args().Get(0)
	if strings.HasPrefix(tool, wire.McpToolPrefix) {
		// An MCP tool's descriptor is its pin, which explain reads (grantsmcp.go).
		return policy.Request{Tool: tool, Arguments: cmd.Args().Get(1), Taint: taint, Untrusted: cmd.Bool("untrusted"), Now: now}, nil
	}
	call := wire.DecodeCall(tool, cmd.Args().Get(1))
	if _, ok := call.Tool(); !ok {
		// brokerd would deny it (no_grant), but a name that is no tool is
		// a mistake on this line, not a decision worth explaining.
		return policy.Request{}, fmt.Errorf("grants explain: no tool named %q; the tools are %s", tool, strings.Join(wire.ToolNames(), ", "))
	}
	return policy.Request{Call: call, Taint: taint, Untrusted: cmd.Bool("untrusted"), Now: now}, nil
}

// parseAt reads --at: the wire's own form, or any RFC 3339 time.
func parseAt(s string) (wire.Timestamp, error) {
	if s == "" {
		return wire.TimestampOf(time.Now())
	}
	if ts, err := wire.ParseTimestamp(s); err == nil {
		return ts, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, errors.New("give a time such as 2026-09-17T08:05:00.000Z")
	}
	return wire.TimestampOf(t)
}

func writeExplanation(out io.Writer, d policy.Decision) {
	for _, s := range d.Explain() {
		fmt.Fprintln(out, s)
	}
	g, hasGrant := d.Grant()
	switch d.Outcome() {
	case policy.Denied:
		if hasGrant {
			fmt.Fprintf(out, "decision: denied %s (grant %s)\n", d.Reason(), g.ID())
		} else {
			fmt.Fprintf(out, "decision: denied %s\n", d.Reason())
		}
	case policy.Allowed:
		fmt.Fprintf(out, "decision: auto: runs now under grant %s (results %s, untrusted %t)\n", g.ID(), g.ResultClass(), g.Untrusted())
	case policy.AwaitsApproval:
		fmt.Fprintf(out, "decision: ask: waits for the owner's approval under grant %s (results %s, untrusted %t)\n", g.ID(), g.ResultClass(), g.Untrusted())
	}
}
