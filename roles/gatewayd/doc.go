// Package gatewayd is the Mattermost role: a bot that carries the owner's
// messages to loopd and the model's replies back, and that puts brokerd's
// approval requests in front of the owner and carries their answers back.
//
// A post from an allow_users id in a configured channel, or in a direct
// message to the bot, becomes chat_send on loop.sock, unless it carries a
// mark of an integration (a webhook, slash command, plugin or OAuth app
// posting under that id; see classify). Each Mattermost thread is one
// session ("mm-" and the thread's root id), and the reply is streamed into
// a post in that thread by editing it at most once per edit_interval, with
// one line per tool call and its outcome. What loopd sends (the model's
// reply, a tool's outcome, an error, a job's reply) is shown only quoted as
// code, never rendered, and every post carries unsafe_links (quote.go): no
// client or server fetches a URL a model wrote. brokerd dials
// gateway.sock and holds one approval_request open per pending approval;
// gatewayd posts it (the arguments fenced as quoted data) in the session's
// thread, or in a direct message to the owner when the session is not one
// of its threads, and answers approval_decision when an allowlisted user
// reacts on that post with approve_emoji or deny_emoji, or replies approve
// or deny in its thread. The first answer wins; brokerd closing the request
// means it was answered elsewhere or expired, and the post says so.
//
// It holds a job_deliveries request open on loop.sock and posts the reply
// of each scheduled job run that loopd sends (jobs.go): to the owner's
// direct messages or a configured channel, as the job file said, marked as
// the job's; but only for a run brokerd said, with job_ended on
// gateway.sock, it minted and has ended, once, and under brokerd's job,
// time, destination and outcome (jobended.go).
//
// witnessd dials its own gateway.sock (run/witnessd-gatewayd) with the last
// audit checkpoint of each hour, checkpoint_post, and gatewayd posts the
// signed note in a code block to the owner's direct messages
// (checkpointpost.go): a copy off the host.
//
// It follows the WebSocket event stream, resumes it by connection_id and
// sequence number after a drop, and reads back over REST what a failed
// resume lost, handling each post and reaction at most once. An approval
// that cannot be posted while Mattermost is down stays pending and is
// posted when the server is back.
//
// gatewayd must never post a job's message on loopd's word alone; never
// forward an approval, or an answer to one, to loopd;
// never take an answer from anyone outside allow_users, from a bot, from an
// integration posting under an allowlisted id, or on any post but the
// approval's own; never log or pass on the bot token (it is read from the
// secrets directory or systemd's credentials, never from config or argv);
// never post a checkpoint note it could not show as it came; never post
// loopd's words as live Markdown; never write to disk; and never import
// another role's package.
package gatewayd
