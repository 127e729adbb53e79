package bxctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/hostsetup"
	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/supervise"
	"boxmaker/roles/internal/units"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func upCommand() *cli.Command {
	return &cli.Command{
		Name:  "up",
		Usage: "start every daemon and keep them running until SIGINT or SIGTERM",
		Flags: append(homeFlags(), &cli.StringFlag{
			Name:  "log",
			Usage: "write the log to `FILE` (emptied first), once no other up serves the home; errors also go to stderr",
		}, &cli.DurationFlag{
			Name:   "failed-retry",
			Usage:  "how long a role that keeps dying waits before its next try",
			Value:  5 * time.Minute,
			Hidden: true, // for tests: the default suits everyone else
		}, &cli.BoolFlag{
			Name:  "scripted-model",
			Usage: "answer with the scripted llama-server stand-in instead of a language model (for trying boxmaker and for tests)",
		}, &cli.StringFlag{
			Name:  "model-script",
			Usage: "answer with the scripted model, following the rules of `FILE` (TOML [[rule]] tables; implies --scripted-model)",
		}, &cli.BoolFlag{
			Name:  "create-users",
			Usage: "as root, create the role users and pair groups that are missing",
		}),
		Action: up,
		// The kill helper, which the supervisor runs under a role's user.
		Commands:        []*cli.Command{killUIDCommand()},
		HideHelpCommand: true,
	}
}

// rolePath is the environment every role gets: a PATH and nothing of the
// caller's, so that no secret in the caller's environment reaches a role.
const rolePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func up(ctx context.Context, cmd *cli.Command) (err error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	lock, err := hostsetup.LockHome(paths.Home)
	if err != nil {
		return err
	}
	defer lock.Close()
	out := cmd.Root().ErrWriter
	if file := cmd.String("log"); file != "" {
		f, err := hostsetup.OpenLog(file)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	log := supervise.LineWriter(out, "up")
	if cmd.String("log") != "" {
		defer func() {
			if err != nil {
				fmt.Fprintf(log, "up: %v\n", err)
			}
		}()
	}
	fmt.Fprintf(log, "up: pid %d, home %s\n", os.Getpid(), paths.Home)
	return serve(ctx, cmd, paths, out, log)
}

// serve is up once it holds the home: it prepares the home, then runs the
// daemons until a signal. out is the log, which log writes up's own lines
// into.
func serve(ctx context.Context, cmd *cli.Command, paths config.Paths, out, log io.Writer) error {
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := roles.SignalContext(ctx)
	defer stop()
	upstream, err := modelUpstream(cmd, cfg, paths, log)
	if err != nil {
		return err
	}
	script, err := modelScript(cmd.String("model-script"))
	if err != nil {
		return err
	}
	creds, err := prepareRoles(cmd, paths, upstream, log)
	if err != nil {
		return err
	}
	start, closeView, err := hostsetup.RoleView(paths, exe, creds, log)
	if err != nil {
		return err
	}
	defer closeView()
	daemons := daemonsFor(paths, roleEnv{upstream: upstream, script: script}, creds, cfg.Gateway != nil)
	scripted := upstream == config.ScriptedUpstream
	opts := supervise.Options{
		Start:      start,
		Executable: exe, Daemons: daemons, Log: out, StartWait: 20 * time.Second, SocketMode: sock.SocketMode,
		MaxRestarts: 5, Window: time.Minute, FailedRetry: cmd.Duration("failed-retry"),
		OnChange:   func(st []supervise.Status) { writeUpState(paths, st, scripted, upstream) },
		KillHelper: killHelper,
	}
	defer os.Remove(upStatePath(paths))
	return supervise.Run(ctx, opts, func() {
		upBanner(log, paths, daemons, scripted)
		if !scripted {
			go probeModel(ctx, log, paths, upstream)
		}
	})
}

// modelUpstream is the llama-server inferproxy forwards to: the scripted
// model's with --scripted-model or --model-script, said plainly, else the
// configured one.
func modelUpstream(cmd *cli.Command, cfg config.Config, paths config.Paths, log io.Writer) (string, error) {
	if cmd.Bool("scripted-model") || cmd.String("model-script") != "" {
		fmt.Fprintln(log, "up: SCRIPTED MODEL: replies come from a script (roles/internal/llamadouble), not from a language model")
		return config.ScriptedUpstream, nil
	}
	if cfg.Infer.Upstream == "" {
		return "", errors.New("no model: set [infer] upstream in " + paths.Config + " or BOXMAKER_UPSTREAM, or start with --scripted-model")
	}
	return cfg.Infer.Upstream, nil
}

// maxModelScript bounds a --model-script file: its text travels in one
// environment variable, which Linux caps at 128 KiB.
const maxModelScript = 64 << 10

// modelScript reads and checks the --model-script file as the owner, so
// that a bad script fails up at once, naming the file and line, and
// inferproxy's user need not be able to read it. "" gives "".
func modelScript(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--model-script: %w", err)
	}
	if len(data) > maxModelScript {
		return "", fmt.Errorf("--model-script %s: %d bytes, more than the %d a script may have", file, len(data), maxModelScript)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("--model-script %s: a NUL byte; a script is TOML text", file)
	}
	if _, err := llamadouble.ParseScript(data); err != nil {
		return "", fmt.Errorf("--model-script %s: %w", file, err)
	}
	return string(data), nil
}

// prepareRoles prepares the home and returns each role's credential: as
// root, the role users (rootSetup); otherwise none, and the roles run as
// the caller.
func prepareRoles(cmd *cli.Command, paths config.Paths, upstream string, log io.Writer) (map[string]*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		if err := prepareHome(paths); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "up: not running as root: every role runs as uid %d, separated by process and socket only\n", os.Getuid())
		return map[string]*syscall.Credential{}, nil
	}
	return hostsetup.RootSetup(paths, upstream, cmd.Bool("create-users"), log)
}

func upBanner(log io.Writer, paths config.Paths, daemons []supervise.Daemon, scripted bool) {
	var names []string
	for _, d := range daemons {
		names = append(names, d.Name)
	}
	model := "the configured llama-server"
	if scripted {
		model = "the SCRIPTED MODEL (not a language model)"
	}
	fmt.Fprintf(log, "up: ready: %s, answering with %s\nup: chat with: boxmaker chat --home %s\n",
		strings.Join(names, ", "), model, paths.Home)
}

// roleEnv is what up knows for the variables the role table's Env column
// names.
type roleEnv struct {
	upstream string // inferproxy's llama-server
	script   string // the --model-script text; "" leaves the default script
}

// daemonsFor lists the daemons of the role table that this configuration
// runs (one that needs [gateway] only with it), each with its sockets, its
// credential (nil: the caller's) and its environment.
func daemonsFor(paths config.Paths, env roleEnv, creds map[string]*syscall.Credential, gateway bool) []supervise.Daemon {
	var out []supervise.Daemon
	for _, spec := range roles.Table {
		if !spec.Daemon || (spec.Needs == roles.GatewayTable && !gateway) {
			continue
		}
		d := supervise.Daemon{Name: spec.Name, Args: []string{"--home", paths.Home, "--config", paths.Config},
			Env: []string{rolePath}, Cred: creds[spec.Name]}
		for _, name := range spec.Env {
			if value, ok := env.value(paths, spec.Name, name, d.Cred != nil); ok {
				d.Env = append(d.Env, name+"="+value)
			}
		}
		for _, p := range roles.ListensOn(spec.Name) {
			d.Sockets = append(d.Sockets, p.Path(paths.Home))
		}
		out = append(out, d)
	}
	return out
}

// value is the variable name's value for role, and whether up sets it at
// all. asRole says the role runs as its own user.
func (e roleEnv) value(paths config.Paths, role, name string, asRole bool) (string, bool) {
	switch name {
	case config.UpstreamEnv:
		return e.upstream, true
	case config.ModelScriptEnv:
		return e.script, e.script != ""
	case config.CredentialsEnv:
		// rootSetup staged the role's copies of its secrets (stageSecrets),
		// as systemd's LoadCredential would; the path, never a secret,
		// goes to the role.
		return units.CredentialDir(paths.Home, role), asRole
	}
	panic("up: the role table names the variable " + name + ", which up does not know")
}

// prepareHome makes the directories the roles write in (run/ and the
// table's State column) when up does not
// run as root; as root, rootSetup makes them from the plan.
func prepareHome(paths config.Paths) error {
	dirs := []string{"run"}
	for _, st := range roles.StateDirs() {
		dirs = append(dirs, st.Path)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(paths.Join(dir), 0o700); err != nil {
			return err
		}
	}
	return nil
}

func upStatePath(paths config.Paths) string { return paths.Join("run", "up.json") }

// scriptedModel reports whether inferproxy answers with the scripted model:
// as the home's boxmaker up says in run/up.json, or, without the file
// (systemd runs the roles), as config.toml's [infer] upstream says.
func scriptedModel(paths config.Paths) bool {
	var st upState
	data, err := os.ReadFile(upStatePath(paths))
	if errors.Is(err, fs.ErrNotExist) {
		cfg, err := config.Load(paths.Config)
		return err == nil && cfg.Infer.Upstream == config.ScriptedUpstream
	}
	return err == nil && wire.Unmarshal(data, &st) == nil && st.ScriptedModel
}

// upState is run/up.json, what `boxmaker status` reads.
type upState struct {
	Supervisor int                `json:"supervisor"`
	Updated    wire.Timestamp     `json:"updated"`
	Roles      []supervise.Status `json:"roles"`
	// ScriptedModel says inferproxy answers with the scripted model, so
	// that chat can say so before the first reply.
	ScriptedModel bool `json:"scripted_model"`
	// Upstream is the model server inferproxy forwards to, for status.
	Upstream string `json:"upstream"`
}

func writeUpState(paths config.Paths, st []supervise.Status, scripted bool, upstream string) {
	now, _ := wire.TimestampOf(time.Now())
	if st == nil {
		st = []supervise.Status{}
	}
	data, err := wire.Marshal(&upState{Supervisor: os.Getpid(), Updated: now, Roles: st, ScriptedModel: scripted, Upstream: upstream})
	if err != nil {
		return
	}
	_ = atomicfile.Write(upStatePath(paths), data, 0o644) // status reads the last whole state
}
