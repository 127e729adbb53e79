package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"boxmaker/policy"
)

// jobFile is a job file as TOML gives it; pointers tell a missing key from
// a zero value.
type jobFile struct {
	Schedule *string `toml:"schedule"`
	TimeZone *string `toml:"time_zone"`
	Every    *string `toml:"every"`
	Prompt   *string `toml:"prompt"`
	Deliver  *string `toml:"deliver"`
	MaxTurn  *string `toml:"max_turn"`
	CatchUp  *bool   `toml:"catch_up"`
}

// jobKeyTypes says what each key holds, for type mismatches go-toml reports.
var jobKeyTypes = map[string]string{
	"schedule": `a string, as "0 7 * * *"`, "time_zone": `a string, as "Europe/Berlin"`,
	"every": `a duration string, as "2h"`, "prompt": "a string",
	"deliver":  `a string: "mattermost", "mattermost:<channel id>" or "log"`,
	"max_turn": `a duration string, as "10m"`, "catch_up": "true or false",
}

// JobError says why a job file was refused: every problem found in it.
type JobError struct {
	File     string
	Problems []policy.Problem
}

// Error writes one "file:line: reason" line per problem, as GrantError does.
func (e *JobError) Error() string {
	return (&policy.GrantError{File: e.File, Problems: e.Problems}).Error()
}

// ParseJob parses and checks one job file. file is its name or path: the
// id is its stem, and errors name it. The error is a *JobError that lists
// every problem found, with its line where known.
func ParseJob(file string, data []byte) (Job, error) {
	id := strings.TrimSuffix(filepath.Base(file), ".toml")
	var probs []policy.Problem
	if err := policy.CheckJobID(id); err != nil {
		probs = append(probs, policy.Problem{Reason: err.Error() + " (the id is the file name without .toml)"})
	}
	var f jobFile
	if bad := policy.DecodeFile(data, &f, jobKeyTypes); bad != nil {
		return Job{}, &JobError{File: file, Problems: append(probs, bad...)}
	}
	j, found := buildJob(id, f)
	probs = append(probs, policy.LineProblems(data, found)...)
	if len(probs) > 0 {
		return Job{}, &JobError{File: file, Problems: probs}
	}
	return j, nil
}

// buildJob checks every field of f and returns the job, or every problem
// found.
func buildJob(id string, f jobFile) (Job, []policy.KeyProblem) {
	j := Job{id: id}
	var c collector
	j.setSchedule(f, &c)
	j.setRun(f, &c)
	return j, c.probs
}

// setSchedule sets the cron schedule and its zone, or the interval.
func (j *Job) setSchedule(f jobFile, c *collector) {
	switch {
	case f.Schedule != nil && f.Every != nil:
		c.add("every", errors.New("a job has schedule or every, not both"))
	case f.Every != nil:
		var err error
		j.every, err = parseDuration("every", *f.Every, time.Minute)
		c.add("every", err)
		if f.TimeZone != nil {
			c.add("time_zone", errors.New("time_zone goes with schedule: every counts real time, in no zone"))
		}
	case f.Schedule != nil:
		var err error
		j.cron, err = ParseCron(*f.Schedule)
		c.add("schedule", err)
		j.zone, err = parseZone(f.TimeZone)
		c.add("time_zone", err)
	default:
		c.add("schedule", errors.New(`schedule (five-field cron, as "0 7 * * *") or every (as "2h") is required`))
	}
}

// setRun sets what a run does: the prompt, where its reply goes, its time
// limit and whether a missed run is made up.
func (j *Job) setRun(f jobFile, c *collector) {
	var err error
	switch {
	case f.Prompt == nil:
		c.add("prompt", errors.New("prompt is required"))
	case strings.TrimSpace(*f.Prompt) == "":
		c.add("prompt", errors.New("prompt is empty"))
	case len(*f.Prompt) > MaxJobPrompt:
		c.add("prompt", fmt.Errorf("prompt is %d bytes; at most %d", len(*f.Prompt), MaxJobPrompt))
	default:
		j.prompt = *f.Prompt
	}
	if f.Deliver == nil {
		c.add("deliver", errors.New(`deliver is required: "mattermost", "mattermost:<channel id>" or "log"`))
	} else {
		j.deliver, err = ParseDelivery(*f.Deliver)
		c.add("deliver", err)
	}
	if f.MaxTurn != nil {
		j.maxTurn, err = parseDuration("max_turn", *f.MaxTurn, time.Second)
		c.add("max_turn", err)
	}
	if f.CatchUp != nil {
		j.catchUp = *f.CatchUp
	}
}

// parseDuration reads a Go duration with a unit, at least least.
func parseDuration(key, s string, least time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf(`%s %q is not a duration: write a number and a unit, as "90s", "10m" or "2h30m"`, key, s)
	}
	if d < least {
		return 0, fmt.Errorf("%s %q is shorter than %s", key, s, durationText(least))
	}
	return d, nil
}

// durationText writes d without the zero units time.Duration.String
// keeps: 6h rather than 6h0m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseZone loads time_zone, or the host's local zone when there is none.
func parseZone(name *string) (*time.Location, error) {
	if name == nil {
		return time.Local, nil
	}
	// LoadLocation takes "" and "Local" for the host's zone; a file that
	// names a zone should name one that means the same on every host.
	if *name == "" || *name == "Local" {
		return time.Local, fmt.Errorf("time_zone %q is not an IANA zone name: leave time_zone out for the host's local zone", *name)
	}
	loc, err := time.LoadLocation(*name)
	if err != nil {
		return time.Local, fmt.Errorf("time_zone %q is not a zone this host knows (an IANA name, as Europe/Berlin)", *name)
	}
	return loc, nil
}

// LoadJobFile reads and parses one job file.
func LoadJobFile(path string) (Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Job{}, &JobError{File: path, Problems: []policy.Problem{{Reason: err.Error()}}}
	}
	return ParseJob(path, data)
}

// LoadJobs loads every *.toml file in dir, as policy.LoadDir loads grants: the
// jobs that parsed and, separately, one error per file that did not, both
// sorted by id. brokerd and loopd leave the bad files out (fail closed);
// `boxmaker grants check` prints them. A dir that does not exist holds no
// jobs: jobs are optional, and homes made before them have no jobs/.
// err is set only when dir exists and cannot be read.
func LoadJobs(dir string) (jobs []Job, bad []error, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	for _, name := range policy.FileNames(entries) {
		j, err := LoadJobFile(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, bad, nil
}

// collector gathers a job file's problems, so that one run of `grants
// check` shows all of them.
type collector struct{ probs []policy.KeyProblem }

func (c *collector) add(key string, err error) {
	if err != nil {
		c.probs = append(c.probs, policy.KeyProblem{Key: key, Text: err.Error()})
	}
}
