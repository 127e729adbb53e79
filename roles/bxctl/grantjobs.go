package bxctl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"boxmaker/policy"
	"boxmaker/policy/jobs"
	"boxmaker/roles/internal/config"
)

// jobCheck is what `grants check` finds in the jobs/ beside the grants it
// checks (DESIGN.md section 13).
type jobCheck struct {
	dir      string
	jobs     []jobs.Job
	bad      []error // job files that do not parse
	dangling []error // grants naming a job that is not a valid file
	delivery []error // jobs delivering where the configuration cannot
}

// problems counts what makes the check fail.
func (c jobCheck) problems() int { return len(c.bad) + len(c.dangling) + len(c.delivery) }

// checkJobs loads the jobs/ and config.toml beside grantsDir, the layout
// of $BOXMAKER_HOME/etc and /etc/boxmaker, and checks the grants' jobs
// and the jobs' deliveries against them.
func checkJobs(grantsDir string, grants []policy.Grant) (jobCheck, error) {
	etc := filepath.Dir(filepath.Clean(grantsDir))
	c := jobCheck{dir: filepath.Join(etc, "jobs")}
	var err error
	if c.jobs, c.bad, err = jobs.LoadJobs(c.dir); err != nil {
		return c, err
	}
	c.dangling = danglingJobs(grantsDir, grants, c.jobs, c.dir)
	c.delivery, err = checkDeliveries(filepath.Join(etc, "config.toml"), c.jobs)
	return c, err
}

// danglingJobs reports each job a grant names that is not a valid job
// file: brokerd would never mint a session the grant applies in.
func danglingJobs(grantsDir string, grants []policy.Grant, valid []jobs.Job, jobsDir string) []error {
	var errs []error
	for _, g := range grants {
		for _, id := range g.Jobs() {
			if !slices.ContainsFunc(valid, func(j jobs.Job) bool { return j.ID() == id }) {
				errs = append(errs, fmt.Errorf("%s: jobs names %q, which is not a valid job in %s", filepath.Join(grantsDir, g.ID()+".toml"), id, jobsDir))
			}
		}
	}
	return errs
}

// checkDeliveries compares the jobs' deliver keys with [gateway]: a reply
// for Mattermost needs gatewayd, and a channel must be one it listens in.
// Without a config.toml beside the grants (a directory of fixtures, say)
// there is nothing to compare with.
func checkDeliveries(configPath string, valid []jobs.Job) ([]error, error) {
	if _, err := os.Stat(configPath); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	gw, err := config.LoadGateway(configPath)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, j := range valid {
		d := j.Deliver()
		switch {
		case d.Kind() == jobs.DeliverLog:
		case gw == nil:
			errs = append(errs, fmt.Errorf("job %s: deliver = %q, but %s has no [gateway], so nothing posts to Mattermost", j.ID(), d, configPath))
		case d.Kind() == jobs.DeliverChannel && !slices.Contains(gw.Channels, d.Channel()):
			errs = append(errs, fmt.Errorf("job %s: deliver = %q, but [gateway] channels in %s does not list that channel", j.ID(), d, configPath))
		}
	}
	return errs, nil
}

// summary is the error line of a failed check.
func (c jobCheck) summary(badGrants, grants int) error {
	var parts []string
	if badGrants > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d grant files are invalid", badGrants, badGrants+grants))
	}
	if len(c.bad) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d job files are invalid", len(c.bad), len(c.bad)+len(c.jobs)))
	}
	if len(c.dangling) > 0 {
		parts = append(parts, fmt.Sprintf("jobs named by grants but not valid: %d", len(c.dangling)))
	}
	if len(c.delivery) > 0 {
		parts = append(parts, fmt.Sprintf("jobs delivering where the configuration cannot: %d", len(c.delivery)))
	}
	return fmt.Errorf("grants check: %s", strings.Join(parts, "; "))
}

// writeJobTable lists the valid jobs, when the jobs/ directory has any.
func writeJobTable(out io.Writer, valid []jobs.Job) {
	if len(valid) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tZONE\tDELIVER\tMAX_TURN\tCATCH_UP")
	for _, j := range valid {
		zone := "-"
		if loc := j.Zone(); loc == time.Local {
			zone = "local"
		} else if loc != nil {
			zone = loc.String()
		}
		maxTurn := "-"
		if d, ok := j.MaxTurn(); ok {
			maxTurn = d.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\n", j.ID(), j.Schedule(), zone, j.Deliver(), maxTurn, j.CatchUp())
	}
	tw.Flush()
}
