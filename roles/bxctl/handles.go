package bxctl

import (
	"context"
	"fmt"
	"io"

	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// handlesCommand is `boxmaker handles show SESSION HANDLE`: a result brokerd
// kept as a handle (DESIGN.md section 15), read through the admin socket.
func handlesCommand() *cli.Command {
	return &cli.Command{
		Name:  "handles",
		Usage: "read the results brokerd kept as handles (grants with result = \"handle\")",
		Flags: homeFlags(),
		Action: func(context.Context, *cli.Command) error {
			return usagef("handles: say what to do: handles show SESSION HANDLE")
		},
		Commands: []*cli.Command{{
			Name:      "show",
			Usage:     "print a handle's content (sanitized for the terminal) and, on stderr, its label",
			ArgsUsage: "SESSION HANDLE",
			Flags:     homeFlags(),
			Action:    showHandle,
		}},
	}
}

func showHandle(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 2 {
		return usagef("handles show takes a SESSION and a HANDLE, such as h1")
	}
	session, err := wire.ParseSessionID(cmd.Args().Get(0))
	if err != nil {
		return usagef("handles show: %v", err)
	}
	name := cmd.Args().Get(1)
	if !wire.ValidHandleName(name) {
		return usagef("handles show: %s is not a handle's name (h1, h2, …)", termtext.Line(name))
	}
	r, err := fetchHandle(ctx, cmd, session, name)
	if err != nil {
		return err
	}
	if r.Ref == nil {
		return fmt.Errorf("session %s has no handle %s", session, name)
	}
	fmt.Fprintln(cmd.Root().ErrWriter, handleLabel(*r.Ref))
	writeContent(cmd.Root().Writer, r.Content)
	return nil
}

func fetchHandle(ctx context.Context, cmd *cli.Command, session wire.SessionID, name string) (wire.HandleShowResult, error) {
	res, err := callBroker(ctx, cmd, wire.HandleShow{Session: session, Handle: name})
	if err != nil {
		return wire.HandleShowResult{}, err
	}
	r, ok := res.(wire.HandleShowResult)
	if !ok {
		return wire.HandleShowResult{}, fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	}
	return r, nil
}

// handleLabel describes a handle in one line; the tool name came from
// brokerd's own catalog check, but is sanitized like everything else.
func handleLabel(ref wire.HandleRef) string {
	trust := "trusted"
	if ref.Untrusted {
		trust = "untrusted"
	}
	return fmt.Sprintf("%s: %s, %s, %d bytes from %s", ref.Handle, ref.Class, trust, ref.Bytes, termtext.Line(ref.Tool))
}

// writeContent prints text sanitized, ending with a newline.
func writeContent(w io.Writer, text string) {
	fmt.Fprint(w, termtext.Clean(text))
	if text != "" && text[len(text)-1] != '\n' {
		fmt.Fprintln(w)
	}
}
