// Package mattermost is gatewayd's thin client for the Mattermost bot API:
// the few REST calls it needs over net/http, and the WebSocket event stream
// with reconnects that resume by connection_id and sequence_number and say
// when events may have been lost, so the caller can read them back over REST.
// Every call waits out a 429 as Retry-After or X-RateLimit-Reset says.
//
// mattermost must never write the bot token anywhere but the Authorization
// header: not into a URL, an error, or a log line. It decides nothing about
// who may talk to the bot; that is gatewayd's.
package mattermost
