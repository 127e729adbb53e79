package main

import (
	"os"
	"testing"

	"boxmaker/fixtures/rolelock"
)

// The stack tests run `boxmaker up` as root, whose daemons run as the role
// users; see rolelock.
func TestMain(m *testing.M) { os.Exit(rolelock.Run(m)) }
