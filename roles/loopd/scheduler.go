package loopd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/wire"
)

// scheduler runs scheduled jobs (DESIGN.md section 13). It decides nothing:
// it reads jobs/ for the prompts, asks brokerd which jobs are due (job_list)
// and for a session for each run (job_start), and runs the prompt there as
// a fresh session's first message. brokerd refuses a run that is not due,
// was not triggered by the owner, or was started for its time already, so
// a scheduler that asks too often runs nothing twice.
type scheduler struct {
	l    *loopd
	tick time.Duration // the longest sleep: jobs/ and brokerd are looked at again after it
	poke chan struct{} // wakes the loop before its time

	mu      sync.Mutex
	running map[string]wire.JobStarted // the run of each job running in this loopd
	badSeen map[string]bool            // job file errors already logged
	fresh   bool                       // the next list is the first since start or since brokerd was unreachable
	base    context.Context            // run's: the runs live as long as the scheduler, not a request
	runs    sync.WaitGroup
}

// defaultJobTick re-reads the job files each minute, cron's resolution, so
// that an edited job applies within a minute.
const defaultJobTick = time.Minute

func newScheduler(l *loopd, tick time.Duration) *scheduler {
	if tick <= 0 {
		tick = defaultJobTick
	}
	return &scheduler{l: l, tick: tick, poke: make(chan struct{}, 1), running: map[string]wire.JobStarted{}, badSeen: map[string]bool{}, fresh: true}
}

// run looks at the jobs until ctx ends, then waits for the runs it started.
func (s *scheduler) run(ctx context.Context) {
	s.mu.Lock()
	s.base = ctx
	s.mu.Unlock()
	defer s.runs.Wait()
	for {
		wait := s.look(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.poke:
			t.Stop()
		}
	}
}

// look starts what is due and returns how long to sleep: until the next
// due time brokerd named, at most tick, at least a second (or tick, when a
// test sets it shorter) so that a refused run is not asked for in a spin.
func (s *scheduler) look(ctx context.Context) time.Duration {
	byID := s.loadJobs()
	if len(byID) == 0 {
		return s.tick
	}
	res, err := s.l.brokerCall(ctx, wire.JobList{})
	list, ok := res.(wire.JobListResult)
	if err != nil || !ok {
		if ctx.Err() == nil {
			s.l.log.Printf("jobs: brokerd did not list the jobs (%v); trying again in %s", errOr(err, res), s.tick)
		}
		s.setFresh(true)
		return s.tick
	}
	if s.setFresh(false) {
		s.recover(ctx, byID, list.Jobs)
	}
	wait := s.tick
	now := s.l.clock()
	for _, info := range list.Jobs {
		job, ok := byID[info.Job]
		if !ok || s.isRunning(info.Job) {
			continue
		}
		if info.Triggered != nil {
			s.start(ctx, job, wire.TriggerOwner)
		}
		if info.Next == nil {
			continue
		}
		if !info.Next.Time().After(now) {
			s.start(ctx, job, wire.TriggerSchedule)
		} else if d := info.Next.Time().Sub(now); d < wait {
			wait = d
		}
	}
	return max(wait, min(time.Second, s.tick))
}

// recover runs once brokerd first answers: a run brokerd still counts as
// running that this loopd does not run was cut short by a loopd that died,
// and is reported interrupted (never run again: brokerd keeps its time
// taken); then each job with catch_up makes up its latest missed run.
func (s *scheduler) recover(ctx context.Context, byID map[string]jobs.Job, infos []wire.JobInfo) {
	for _, info := range infos {
		if info.Last != nil && info.Last.Outcome == wire.RunRunning && !s.isRunning(info.Job) {
			s.l.log.Printf("job %s: run %s was cut short by a loopd restart; recorded as interrupted", info.Job, info.Last.Session)
			s.l.reportDone(ctx, info.Last.Session, wire.RunInterrupted, "loopd stopped during the run")
		}
	}
	for _, info := range infos {
		if job, ok := byID[info.Job]; ok && info.CatchUp && !s.isRunning(info.Job) {
			s.start(ctx, job, wire.TriggerCatchUp)
		}
	}
}

// start asks brokerd for a run of job and, when it mints one, runs it in
// the background. It returns brokerd's answer.
func (s *scheduler) start(ctx context.Context, job jobs.Job, trig wire.RunTrigger) wire.Message {
	res, err := s.l.brokerCall(ctx, wire.JobStart{Job: job.ID(), Trigger: trig})
	started, ok := res.(wire.JobStarted)
	if err != nil || !ok {
		why := errOr(err, res).Error()
		if r, refused := res.(wire.JobRefused); refused {
			why = r.Reason
		}
		s.l.log.Printf("job %s: no %s run: %s", job.ID(), trig, why)
		return wire.JobRefused{Job: job.ID(), Reason: why}
	}
	s.mu.Lock()
	s.running[job.ID()] = started
	s.mu.Unlock()
	s.runs.Go(func() {
		defer s.done(job.ID())
		s.l.runJob(ctx, job, started)
	})
	return started
}

// runNow serves the owner's job_run on loop.sock: claim the trigger the
// owner just gave brokerd, and start the run under the scheduler's ctx
// (it outlives the request).
func (s *scheduler) runNow(id string) wire.Message {
	s.mu.Lock()
	ctx := s.base
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return wire.JobRefused{Job: id, Reason: "loopd's scheduler is not running"}
	}
	job, ok := s.loadJobs()[id]
	if !ok {
		return wire.JobRefused{Job: id, Reason: "loopd finds no valid job file jobs/" + id + ".toml"}
	}
	res := wire.Message(wire.JobRefused{Job: id, Reason: "a run of it is running in loopd"})
	if !s.isRunning(id) {
		res = s.start(ctx, job, wire.TriggerOwner)
	}
	if _, refused := res.(wire.JobRefused); refused {
		// The scheduler's own look may have claimed the owner's trigger
		// first: that run is the one the owner asked for.
		s.mu.Lock()
		run, ok := s.running[id]
		s.mu.Unlock()
		if ok && run.Trigger == wire.TriggerOwner {
			return run
		}
	}
	return res
}

// loadJobs reads jobs/ as it is now; a bad file is left out and logged once.
func (s *scheduler) loadJobs() map[string]jobs.Job {
	loaded, bad, err := jobs.LoadJobs(s.l.paths.Jobs)
	if err != nil {
		bad = append(bad, err)
	}
	s.mu.Lock()
	for _, e := range bad {
		if !s.badSeen[e.Error()] {
			s.badSeen[e.Error()] = true
			s.l.log.Printf("jobs: ignoring: %v", e)
		}
	}
	s.mu.Unlock()
	out := make(map[string]jobs.Job, len(loaded))
	for _, j := range loaded {
		out[j.ID()] = j
	}
	return out
}

func (s *scheduler) isRunning(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.running[id]
	return ok
}

// done forgets the job's run, which ended.
func (s *scheduler) done(id string) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// setFresh sets fresh and reports what it was.
func (s *scheduler) setFresh(v bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.fresh
	s.fresh = v
	return was
}

// brokerCall sends one request to brokerd on a connection of its own.
func (l *loopd) brokerCall(ctx context.Context, m wire.Message) (wire.Message, error) {
	c, err := l.broker.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Call(ctx, m, nil)
}

// errOr is err, or an error naming the unexpected answer res.
func errOr(err error, res wire.Message) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("brokerd answered %s", wire.KindOf(res))
}
