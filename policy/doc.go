// Package policy decides whether a tool call may run: it parses and checks
// the owner's grant files, matches a call's arguments against each grant's
// constraints (hosts, paths, patterns), applies the five steps of the
// decision with the untrusted rule (when_untrusted, DESIGN.md section 12),
// and keeps a session's taint and untrusted flag.
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
