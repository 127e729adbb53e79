// Package toolrun is the contract between brokerd, which starts a tool
// sandbox, and toolkit, which runs inside it: the Job that goes in on the
// sandbox's stdin, the Output that comes back on its stdout, the fixed
// descriptor numbers, and the kernel features both sides rely on.
//
// Both sides encode with wire.Marshal and decode with wire.Unmarshal, so the
// contract is as strict as the frames: every member present, none unknown.
//
// toolrun must never carry a secret (egressd adds credentials outside the
// sandbox), and an Output must never carry a label (class, trust, truncation
// flag): tools do not label their own output, brokerd does, from the grant.
package toolrun
