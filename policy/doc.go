// Package policy decides whether a tool call may run: it parses and checks
// the owner's grant files, matches a call's arguments (a wire.Call, decoded
// once by its caller) against each grant's constraints (hosts, paths,
// patterns), applies the five steps of the decision with the untrusted
// rule (when_untrusted, DESIGN.md section 12) and the handles the call
// refers to (section 15), says which grants apply in a job's sessions (a
// grant's jobs key), and keeps a session's taint and untrusted flag. The
// job files themselves are policy/jobs'; policy reads the owner's TOML
// files one way for both (tomlfile.go).
//
// Its Decision type is the only thing the tool runner accepts: its fields are
// unexported, Decide and Approve are the only ways to make a valid one, and
// Decision.Runnable refuses the zero value, a denial and an ask that the
// owner has not approved.
//
// policy must never do I/O beyond reading grant files (and watching their
// directory, so that Dir parses only what changed), never trust what a
// tool or loopd says about a result's class, never let a grant that failed
// to parse, or arguments that failed to parse, match anything, and never
// import another boxmaker package than wire. Where matching is in doubt it
// answers "no match": every grant is a ceiling, and no grant means deny.
package policy
