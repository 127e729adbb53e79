package loopd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"strings"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/termtext"

	"github.com/urfave/cli/v3"
)

// verifyDeviceCommand is `boxmaker loopd verify-device --upstream URL`
// (`make verify-device UPSTREAM=…`): a conformance run of a real
// llama-server against what loopd relies on, through loopd's own client,
// request and stream code. It is a development-time check run by a person;
// the daemon never dials TCP.
func verifyDeviceCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify-device",
		Usage: "check a llama-server against what loopd relies on, one PASS or FAIL line per check",
		Description: "Streams, reasoning, a tool call with fragmented arguments, ten turns that must reuse the\n" +
			"previous prompt from the cache, one compaction, /props, /slots and error bodies. It talks\n" +
			"to the server directly over TCP (this command only; loopd itself reaches the model through\n" +
			"inferproxy), uses slot 0, and exits 1 if any check fails.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "upstream", Required: true, Usage: "the llama-server, http://host:port"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "the longest one check may take, and so each model request within it"},
			// A small model that seldom ends its turn fills 2,048 tokens a
			// reply, and ten turns overflow a small context (issue 26).
			&cli.IntFlag{Name: "max-tokens", Value: verifyTokens, Usage: "the cap on each reply (max_tokens), reasoning included"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return roles.Usagef("verify-device takes no arguments")
			}
			base, err := upstreamBase(cmd.String("upstream"))
			if err != nil {
				return roles.Usagef("verify-device: --upstream: %v", err)
			}
			ctx, stop := roles.SignalContext(ctx)
			defer stop()
			if cmd.Int("max-tokens") < 1 {
				return roles.Usagef("verify-device: --max-tokens must be at least 1")
			}
			return VerifyDevice(ctx, base, cmd.Duration("timeout"), int(cmd.Int("max-tokens")), cmd.Root().Writer)
		},
	}
}

// upstreamBase checks raw as inferproxy checks [infer] upstream: http or
// https, a host, at most a path prefix, no credentials, query or fragment.
// It returns raw without a trailing slash.
func upstreamBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want http://host:port", raw)
	case u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%q has no host", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", fmt.Errorf("%q: want http://host:port, without credentials, query or fragment", u.Redacted())
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// VerifyDevice runs every check against the llama-server at base, each
// reply capped at maxTokens, and writes one line per check to out. It returns an error naming how many
// failed, or nil when all passed.
func VerifyDevice(ctx context.Context, base string, timeout time.Duration, maxTokens int, out io.Writer) error {
	cfg := config.DefaultLoop()
	cfg.RequestTimeout = config.Dur(timeout)
	cfg.SummaryTokens = min(cfg.SummaryTokens, maxTokens) // the summary is a reply too
	v := &verifier{out: out, timeout: timeout, maxTokens: maxTokens, l: &loopd{
		cfg: cfg, log: log.New(io.Discard, "", 0), clock: time.Now, infer: newUpstreamClient(base),
	}}
	defer v.l.infer.close()
	fmt.Fprintf(out, "verify-device: %s\n", base)
	for _, c := range verifyChecks {
		v.run(ctx, c)
	}
	fmt.Fprintf(out, "verify-device: %d passed, %d failed\n", v.passed, v.failed)
	if v.failed > 0 {
		return fmt.Errorf("verify-device: %d of %d checks failed", v.failed, v.passed+v.failed)
	}
	return nil
}

// verifier is one conformance run: a loopd with no store and no brokerd,
// whose epochs live in memory.
type verifier struct {
	out            io.Writer
	timeout        time.Duration // bounds each check
	maxTokens      int           // each reply's max_tokens
	l              *loopd
	props          *serverProps // once /props answered
	streamed       *turnReply   // the streaming check's turn, which the reasoning check reads
	tenTurns       *epochState  // the cache check's epoch, which the compaction check summarises
	passed, failed int
}

// verifyCheck is one named check: it returns what it saw, or why it failed.
type verifyCheck struct {
	name  string
	needs bool // needs /props to have answered
	run   func(*verifier, context.Context) (string, error)
}

func (v *verifier) run(ctx context.Context, c verifyCheck) {
	var detail string
	var err error
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case c.needs && v.props == nil:
		err = fmt.Errorf("not run: /props did not answer")
	default:
		// A line as the check starts, so that a server that hangs shows
		// where; the check itself is bounded by --timeout, the first
		// (/props) as much as the ten turns.
		fmt.Fprintf(v.out, "...  %s\n", c.name)
		cctx, cancel := context.WithTimeout(ctx, v.timeout)
		detail, err = c.run(v, cctx)
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within --timeout %s (%v)", v.timeout, err)
		}
		cancel()
	}
	// Every word here may come from the server: escaped for the terminal.
	if err != nil {
		v.failed++
		fmt.Fprintf(v.out, "FAIL %-16s %s\n", c.name, termtext.Line(err.Error()))
		return
	}
	v.passed++
	fmt.Fprintf(v.out, "PASS %-16s %s\n", c.name, termtext.Line(detail))
}

// quote is a model's text, shortened, for a PASS line.
func quote(s string) string {
	return fmt.Sprintf("%q", shorten(strings.TrimSpace(s), 60))
}
