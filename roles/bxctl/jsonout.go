package bxctl

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v3"
)

// jsonFlag is --json, documented with the shape it prints (docs/cli.md
// lists them all).
func jsonFlag(shape string) cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON on stdout instead of the table: " + shape}
}

// withJSON is homeFlags and --json.
func withJSON(shape string) []cli.Flag { return append(homeFlags(), jsonFlag(shape)) }

// printJSON writes v as one line of JSON, escaped for a terminal: what a
// peer named (a note's path, a job's prompt) reaches the screen as \u
// escapes, never as the characters.
func printJSON(out io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, jsonForTerminal(string(b)))
	return err
}

// The shapes of --json, as their flags' help says them.
const (
	jobsShape  = "an array of objects: job, schedule, time_zone, deliver, max_turn, catch_up, next, triggered, last (null, or the last run)"
	notesShape = "an array of objects: path, folder, label (class, untrusted, session, call, sha256; null for the owner's)"
)

// nonNil is s, or an empty slice: JSON's [] rather than null for "none".
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
