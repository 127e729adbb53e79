package policy

import (
	"errors"
	"fmt"
)

// ResultIsHandle reports whether the grant says result = "handle": brokerd
// keeps each result and the model gets only a handle to it, so the
// session's taint and untrusted flag do not change (DESIGN.md section 15).
func (g Grant) ResultIsHandle() bool { return g.handleResult }

// Declassify reports whether an inspect grant says declassify = true: its
// answers take the grant's result_class instead of the handle's class.
func (g Grant) Declassify() bool { return g.declassify }

// setHandleKeys checks result and declassify, once tool and mode are known.
func (g *Grant) setHandleKeys(f grantFile, c *collector) {
	if f.Result != nil {
		switch *f.Result {
		case "content":
		case "handle":
			g.handleResult = true
			switch {
			case g.mode == Deny:
				c.add("result", errors.New(`result = "handle" says what becomes of a result; a deny grant has none: remove it`))
			case g.tool.InBroker:
				c.add("result", fmt.Errorf(`result = "handle" does not apply to %s, whose answer is already a small typed value`, g.tool.Name))
			}
		default:
			c.add("result", fmt.Errorf(`result must be "content" (the default) or "handle", not %q`, *f.Result))
		}
	}
	if f.Declassify != nil {
		g.declassify = *f.Declassify
		if g.tool.Name != "" && g.tool.Name != "inspect" {
			c.add("declassify", fmt.Errorf("declassify applies only to inspect grants, not %s: remove it", g.tool.Name))
		}
	}
}
