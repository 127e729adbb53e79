package hostsetup

import (
	"os"
	"testing"

	"boxmaker/fixtures/rolelock"
)

// The root setup tests run processes as the role users; see rolelock.
func TestMain(m *testing.M) { os.Exit(rolelock.Run(m)) }
