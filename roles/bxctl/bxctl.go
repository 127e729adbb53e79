package bxctl

import "github.com/urfave/cli/v3"

// Command is the bxctl role: its commands under one name.
func Command() *cli.Command {
	return &cli.Command{
		Name:     "bxctl",
		Usage:    "the owner's command line (its commands also work as `boxmaker <command>`)",
		Commands: Commands(),
	}
}

// Commands builds bxctl's command tree afresh.
func Commands() []*cli.Command {
	return append(approvalCommands(),
		initCommand(),
		upCommand(),
		statusCommand(),
		chatCommand(),
		sessionsCommand(),
		notesCommand(),
		handlesCommand(),
		mcpCommand(),
		jobsCommand(),
		installCommand(),
		auditCommand(),
		grantsCommand(),
		wireCommand(),
	)
}
