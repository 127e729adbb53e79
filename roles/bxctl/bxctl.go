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
	cmds := append(approvalCommands(),
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
	for _, c := range cmds {
		c.Category = categories[c.Name]
	}
	return cmds
}

// categories group the commands in the help by what the owner is doing.
var categories = map[string]string{
	"chat": "chat and approvals", "approvals": "chat and approvals", "approve": "chat and approvals", "deny": "chat and approvals",
	"init": "setup and running", "up": "setup and running", "status": "setup and running", "install": "setup and running", "mcp": "setup and running",
	"sessions": "records", "notes": "records", "handles": "records",
	"jobs": "records", "audit": "records",
	"grants": "checks", "wire": "checks",
}
