package brokerd

import (
	"debug/elf"
	"fmt"
)

// checkStatic refuses a boxmaker binary that needs a dynamic loader: the
// sandboxes of most tools have no /lib, so toolkit must be one static file.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("the boxmaker binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the boxmaker binary %s is dynamically linked, and the tool sandboxes have no libraries: build it with `make build` (CGO_ENABLED=0)", path)
		}
	}
	return nil
}
