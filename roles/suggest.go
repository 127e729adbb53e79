package roles

import (
	"strings"

	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// flagSuggestion is "; did you mean --NAME?" for an unknown flag close to
// one cmd has, else "".
func flagSuggestion(cmd *cli.Command, err error) string {
	given, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	given = strings.TrimLeft(given, "-")
	var names []string
	for _, f := range cmd.Flags {
		names = append(names, f.Names()...)
	}
	if near := config.Nearest(given, names); near != "" {
		return "; did you mean --" + near + "?"
	}
	return ""
}
