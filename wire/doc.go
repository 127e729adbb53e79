// Package wire is boxmaker's protocol: the frame codec, the envelope and its
// messages, and the audit and session log records, with one canonical encoder
// for every byte that is sent, hashed or compared.
//
// Decoding is strict: unknown or missing members, duplicate names, invalid
// UTF-8 (also as escaped lone surrogates), null outside an Option, floats,
// exponents, signs and out-of-range integers, and data after the value are all
// bad_message errors. Decoders and constructors validate; invalid input is an
// error, never a panic. The fixtures under fixtures/wire and fixtures/log are
// the specification, byte for byte.
//
// The tool catalog (tools.go) is here so that the roles agree on one list
// without importing each other. Each row also says, as data, what the
// tool's sandbox holds (sandbox.go): wire names what a tool needs, and the
// roles build it.
//
// A tool call is decoded once into a Call (call.go): DecodeCall(name,
// arguments) for a catalog tool, or Tool.Call(arguments) for a descriptor
// from elsewhere (an MCP tool's, from its pinned lock). A Call holds the
// descriptor (Tool), the typed arguments (Args, nil when they did not
// decode, with Err saying why) and their canonical text (Arguments, as
// sent when they did not decode); WithArgs respells it with other
// arguments of the same tool. Later stages take the Call, never the strings.
//
// wire must never import another boxmaker package, hold policy, or do I/O
// beyond reading and writing frames on a stream its caller supplies.
package wire
