package bxctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// jobsCommand is `boxmaker jobs [list | show ID | run ID]` (DESIGN.md
// section 13): the scheduled jobs as brokerd runs them, through the admin
// socket; `run` also tells loopd, so that the run starts now.
func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:   "jobs",
		Usage:  "list the scheduled jobs: schedule, next run, last result (read from the files when brokerd is down)",
		Flags:  withJSON(jobsShape),
		Action: listJobs,
		Commands: []*cli.Command{{
			Name:   "list",
			Usage:  "list the scheduled jobs (the default)",
			Flags:  withJSON(jobsShape),
			Action: listJobs,
		}, {
			Name:      "show",
			Usage:     "print a job's schedule, prompt and recent runs",
			ArgsUsage: "ID",
			Flags:     homeFlags(),
			Action:    showJob,
		}, {
			Name:      "run",
			Usage:     "run a job now (audited, with you as approver)",
			ArgsUsage: "ID",
			Flags:     homeFlags(),
			Action:    runJob,
		}},
	}
}

func listJobs(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("jobs: no command named %q; valid: list, show, run", cmd.Args().First())
	}
	list, err := jobList(ctx, cmd)
	if err != nil {
		return err
	}
	out := cmd.Root().Writer
	if cmd.Bool("json") {
		return printJSON(out, nonNil(list.Jobs))
	}
	if len(list.Jobs) == 0 {
		fmt.Fprintln(out, "no jobs (a job is a file jobs/<id>.toml beside grants/)")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tNEXT\tLAST")
	for _, j := range list.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.Job, schedule(j), nextRun(j), lastResult(j.Last))
	}
	return tw.Flush()
}

// jobList asks brokerd, or works the list out from the files when brokerd
// is not answering (readJobList): the same list, and stderr says which.
func jobList(ctx context.Context, cmd *cli.Command) (wire.JobListResult, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return wire.JobListResult{}, err
	}
	path, err := sock.PathOf(paths, "bxctl", "brokerd")
	if err != nil {
		return wire.JobListResult{}, err
	}
	c, err := sock.Dial(path)
	if err != nil {
		dialErr := fmt.Errorf("brokerd is not answering at %s (is boxmaker up?): %w", path, err)
		list, bad, err := readJobList(paths, time.Now())
		if err != nil {
			return wire.JobListResult{}, fmt.Errorf("%w; reading the job files instead failed too: %v", dialErr, err)
		}
		errOut := cmd.Root().ErrWriter
		fmt.Fprintf(errOut, "brokerd is not answering: read from %s and %s\n", paths.Jobs, paths.Join("broker", "jobs"))
		for _, e := range bad {
			fmt.Fprintln(errOut, termtext.Line("ignoring a job file: "+e.Error()))
		}
		return list, nil
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, wire.JobList{}, nil)
	if err != nil {
		return wire.JobListResult{}, err
	}
	list, ok := res.(wire.JobListResult)
	if !ok {
		return wire.JobListResult{}, fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	}
	return list, nil
}

// schedule is the job's schedule with the zone it is read in.
func schedule(j wire.JobInfo) string {
	if j.TimeZone == "" {
		return j.Schedule
	}
	return j.Schedule + " (" + j.TimeZone + ")"
}

func nextRun(j wire.JobInfo) string {
	next := "never"
	if j.Next != nil {
		next = localTime(*j.Next)
	}
	if j.Triggered != nil {
		next = "now (run by you at " + localTime(*j.Triggered) + ")"
	}
	return next
}

// lastResult is how the last run ended, and when.
func lastResult(r *wire.JobRun) string {
	switch {
	case r == nil:
		return "none yet"
	case r.Ended == nil:
		return fmt.Sprintf("%s since %s", r.Outcome, localTime(r.Started))
	}
	return fmt.Sprintf("%s at %s", r.Outcome, localTime(*r.Ended))
}

// localTime shows a time as the owner reads a clock.
func localTime(ts wire.Timestamp) string {
	return ts.Time().In(time.Local).Format("2006-01-02 15:04:05 MST")
}

func showJob(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("jobs show takes one job ID")
	}
	res, err := callBroker(ctx, cmd, wire.JobShow{Job: cmd.Args().First()})
	if err != nil {
		return err
	}
	switch r := res.(type) {
	case wire.JobShowResult:
		writeJob(cmd.Root().Writer, r)
		return nil
	case wire.JobRefused:
		return fmt.Errorf("jobs show: %s", termtext.Line(r.Reason))
	}
	return fmt.Errorf("brokerd answered %s", wire.KindOf(res))
}

// writeJob prints a job: its settings, its prompt, then its runs.
func writeJob(out io.Writer, r wire.JobShowResult) {
	j := r.Job
	fmt.Fprintf(out, "job %s\nschedule: %s\nnext: %s\ndeliver: %s\nmax_turn: %s\ncatch_up: %v\nprompt:\n",
		j.Job, schedule(j), nextRun(j), j.Deliver, j.MaxTurn, j.CatchUp)
	fmt.Fprintln(out, indent(termtext.Clean(r.Prompt)))
	if len(r.Runs) == 0 {
		fmt.Fprintln(out, "runs: none yet")
		return
	}
	fmt.Fprintln(out, "runs (newest first):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SESSION\tTRIGGER\tFOR\tRESULT\tDETAIL")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", run.Session, run.Trigger, localTime(run.Scheduled), lastResult(&run), termtext.Line(run.Detail))
	}
	tw.Flush()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ")
}

// runJob is `jobs run ID`: the owner's trigger goes to brokerd, which alone
// can let a run start that is not due; then loopd is asked to claim it
// now. When loopd cannot be reached, it claims the trigger when it next
// looks at the jobs (within a minute), while brokerd holds it.
func runJob(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("jobs run takes one job ID")
	}
	id := cmd.Args().First()
	res, err := callBroker(ctx, cmd, wire.JobRunNow{Job: id})
	if err != nil {
		return err
	}
	trig, ok := res.(wire.JobTriggered)
	if !ok {
		return refusedOr("jobs run", res)
	}
	out := cmd.Root().Writer
	res, err = callLoopd(ctx, cmd, wire.JobRunNow{Job: id})
	if err != nil {
		fmt.Fprintf(out, "job %s: brokerd holds your request until %s, but loopd did not take it now (%v); it starts when loopd next looks\n",
			id, localTime(trig.Expires), err)
		return nil
	}
	started, ok := res.(wire.JobStarted)
	if !ok {
		return refusedOr("jobs run", res)
	}
	fmt.Fprintf(out, "job %s: started in session %s (boxmaker sessions show %s)\n", id, started.Session, started.Session)
	return nil
}

func refusedOr(what string, res wire.Message) error {
	if r, ok := res.(wire.JobRefused); ok {
		return fmt.Errorf("%s: %s", what, termtext.Line(r.Reason))
	}
	return fmt.Errorf("%s: answered %s", what, wire.KindOf(res))
}
