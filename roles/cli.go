package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/termtext"

	"github.com/urfave/cli/v3"
)

// Exit statuses every command keeps to, so scripts can tell failure kinds apart.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the thing checked is wrong, or the work failed
	ExitUsage   = 2 // the command line is wrong
	programName = "boxmaker"
)

// UsageError is a wrong command line: exit status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Role is one entry of the multicall binary: a daemon or bxctl. Command
// builds a fresh command tree each call, because urfave/cli links a command
// to one parent.
type Role struct {
	Name    string
	Command func() *cli.Command
}

// Program is what main hands over: the version it was built with, the roles
// built so far, and bxctl's commands, which also sit at the top level so that
// `boxmaker chat` and `bxctl chat` are the same command.
type Program struct {
	Version  string
	Roles    []Role
	Commands func() []*cli.Command
	Stdin    io.Reader // nil: os.Stdin; tests give a message here
}

// Run picks the role from the base name of args[0] or else from args[1], runs
// it, writes any error to stderr, and returns the exit status.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := filepath.Base(args[0])
	var cmd *cli.Command
	if r, ok := p.role(name); ok {
		cmd = r.Command()
		cmd.Version = p.Version
	} else {
		name = programName
		cmd = p.root(args[1:])
	}
	cmd.Name = name
	cmd.Writer, cmd.ErrWriter, cmd.Reader = stdout, stderr, p.Stdin
	cmd.ExitErrHandler = func(context.Context, *cli.Command, error) {} // we exit, not the library
	prepare(cmd)
	err := cmd.Run(ctx, append([]string{name}, args[1:]...))
	return report(err, name, stderr)
}

// role returns the role called name.
func (p Program) role(name string) (Role, bool) {
	i := slices.IndexFunc(p.Roles, func(r Role) bool { return r.Name == name })
	if i < 0 {
		return Role{}, false
	}
	return p.Roles[i], true
}

// root is `boxmaker` itself: every role, and bxctl's commands at the top.
// When the first argument names a role, the tree holds that role alone,
// which then runs as it would in the whole tree: every sandboxed tool call
// starts as `boxmaker toolkit TOOL`, and building and walking the whole tree
// (every command's flags and help) cost more than the rest of that start.
func (p Program) root(args []string) *cli.Command {
	root := &cli.Command{
		Usage:   "a self-hosted agent whose every tool call is decided, sandboxed and audited",
		Version: p.Version,
		// `boxmaker completion bash|zsh|fish` prints a completion script.
		EnableShellCompletion: true,
		// `boxmaker --home DIR COMMAND`: urfave/cli hands the root's flags
		// down to every command that has none of the same name; the
		// commands keep their own --home and --config, and FlagOf reads
		// whichever of the line's was given, the innermost first.
		Flags: HomeFlags(),
	}
	if len(args) > 0 {
		if r, ok := p.role(args[0]); ok {
			root.Commands = []*cli.Command{r.Command()}
			return root
		}
	}
	for _, r := range p.Roles {
		// The roles run as `boxmaker ROLE` (or by argv[0]) but are not the
		// owner's commands: the top-level help lists those alone.
		cmd := r.Command()
		cmd.Hidden = true
		root.Commands = append(root.Commands, cmd)
	}
	root.Commands = append(root.Commands, p.Commands()...)
	return root
}

// prepare makes every command in the tree answer a wrong command line with a
// UsageError, and every command that only groups others refuse a name it
// does not know.
func prepare(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		return UsageError{Msg: err.Error() + flagSuggestion(c, err)}
	}
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = groupAction
	}
	if spec, ok := Lookup(cmd.Name); ok && spec.Daemon && cmd.Before == nil {
		cmd.Before = confineDaemon
	}
	for _, sub := range cmd.Commands {
		prepare(sub)
	}
}

// groupAction runs when a command that only groups others is called without
// one of them: show help, or name what is valid.
func groupAction(ctx context.Context, cmd *cli.Command) error {
	if !cmd.Args().Present() {
		if err := cli.ShowSubcommandHelp(cmd); err != nil {
			return err
		}
		return UsageError{Msg: ""}
	}
	var valid []string
	for _, sub := range cmd.Commands {
		if sub.Name != "help" && sub.Name != "completion" {
			valid = append(valid, sub.Name)
		}
	}
	what := "command"
	if cmd.Root() == cmd && cmd.Name == programName {
		what = "role or command"
	}
	given := cmd.Args().First()
	if near := config.Nearest(given, valid); near != "" {
		return Usagef("%s: no %s named %q; valid: %s; did you mean %q?", cmd.FullName(), what, given, strings.Join(valid, ", "), near)
	}
	return Usagef("%s: no %s named %q; valid: %s", cmd.FullName(), what, given, strings.Join(valid, ", "))
}

// report writes err and maps it to an exit status.
func report(err error, name string, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	code := ExitFailed
	var usage UsageError
	var coder cli.ExitCoder
	switch {
	case errors.As(err, &usage):
		code = ExitUsage
	case errors.As(err, &coder):
		code = coder.ExitCode()
	}
	if msg := err.Error(); msg != "" {
		if !strings.HasPrefix(msg, name+":") && !strings.HasPrefix(msg, programName) {
			msg = name + ": " + msg
		}
		// An error may quote a peer (loopd's detail, a grant file's text):
		// it reaches the terminal through the sanitizer like any such text.
		fmt.Fprintln(stderr, termtext.Clean(msg))
	}
	return code
}

// SignalContext is ctx, ended by SIGINT or SIGTERM: how a daemon learns to stop.
func SignalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
