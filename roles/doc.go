// Package roles holds what boxmaker's roles share: how a command line picks a
// role or command, and the exit status conventions (0 success, 1 the thing
// checked is wrong, 2 usage). Each role lives in its own package under roles/
// and exposes a command builder; main.go maps names to them and nothing more.
//
// roles must never import a role package (roles/<role>), and must do nothing
// at import time: no init side effects, no global flags, no environment reads.
package roles
