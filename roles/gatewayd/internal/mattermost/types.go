package mattermost

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// User is what users/me says of the bot.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	IsBot    bool   `json:"is_bot"`
}

// Post is a Mattermost post, with the fields gatewayd reads or writes.
type Post struct {
	ID            string         `json:"id,omitempty"`
	CreateAt      int64          `json:"create_at,omitzero"`
	UpdateAt      int64          `json:"update_at,omitzero"`
	EditAt        int64          `json:"edit_at,omitzero"`
	DeleteAt      int64          `json:"delete_at,omitzero"`
	UserID        string         `json:"user_id,omitempty"`
	ChannelID     string         `json:"channel_id"`
	RootID        string         `json:"root_id,omitempty"`
	Message       string         `json:"message"`
	Type          string         `json:"type,omitempty"`
	Props         map[string]any `json:"props,omitempty"`
	FileIDs       []string       `json:"file_ids,omitempty"`
	PendingPostID string         `json:"pending_post_id,omitempty"`
}

// ThreadRoot is the id of the thread the post is in: its root, or the post
// itself when it is a root.
func (p Post) ThreadRoot() string {
	if p.RootID != "" {
		return p.RootID
	}
	return p.ID
}

// Prop returns a string prop, or "" when absent or not a string.
func (p Post) Prop(name string) string {
	s, _ := p.Props[name].(string)
	return s
}

// FromBot reports whether Mattermost marked the post as written by a bot
// account ("from_bot": "true", or a boolean from older plugins).
func (p Post) FromBot() bool {
	switch v := p.Props["from_bot"].(type) {
	case string:
		return v == "true"
	case bool:
		return v
	}
	return false
}

// integrationProps are the props by which the server marks a post that an
// integration made under a person's user id (server/public/model/post.go,
// the PostProps* constants): incoming and outgoing webhooks and slash
// command responses (from_webhook, override_username, override_icon_url,
// override_icon_emoji, webhook_display_name; all but from_bot and
// from_oauth_app are what model.ContainsIntegrationsReservedProps reserves
// for integrations), plugins (from_plugin), OAuth apps (from_oauth_app), bot
// accounts (from_bot), and the message attachments and interactive blocks
// that only integrations send (attachments, mm_blocks_actions).
var integrationProps = []string{
	"from_webhook", "from_plugin", "from_oauth_app", "from_bot",
	"override_username", "override_icon_url", "override_icon_emoji", "webhook_display_name",
	"attachments", "mm_blocks_actions",
}

// IntegrationMarks names what marks the post as made by an integration
// rather than typed by its user: each integration prop present with a value
// other than null, "" or false (any other string counts, "false" too, as
// does a number or an object), and a non-empty type. It is nil for a plain
// post. The names are fixed words and the type is quoted, so the result may
// be logged; the prop values are never in it.
func (p Post) IntegrationMarks() []string {
	var marks []string
	for _, name := range integrationProps {
		if marking(p.Props[name]) {
			marks = append(marks, "props."+name)
		}
	}
	if p.Type != "" {
		marks = append(marks, fmt.Sprintf("type %q", p.Type))
	}
	return marks
}

// marking reports whether a prop's value marks the post: present, and not
// null, "" or false.
func marking(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case bool:
		return v
	}
	return true
}

// PostList is the answer of the thread and channel-posts calls.
type PostList struct {
	Order []string        `json:"order"`
	Posts map[string]Post `json:"posts"`
}

// Reaction is one emoji on a post.
type Reaction struct {
	UserID    string `json:"user_id"`
	PostID    string `json:"post_id"`
	EmojiName string `json:"emoji_name"`
	CreateAt  int64  `json:"create_at,omitzero"`
	ChannelID string `json:"channel_id,omitempty"`
}

// Channel is what channels/direct answers.
type Channel struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Name string `json:"name"`
}

// Event is one WebSocket event: {event, data, broadcast, seq}. Data values
// stay raw, because several of them are JSON held in a JSON string.
type Event struct {
	Event     string                    `json:"event"`
	Data      map[string]jsontext.Value `json:"data"`
	Broadcast struct {
		ChannelID string `json:"channel_id"`
		UserID    string `json:"user_id"`
	} `json:"broadcast"`
	Seq    *int64 `json:"seq"`
	Status string `json:"status"` // set on replies to actions, which are not events
}

// String returns data[name] when it is a JSON string.
func (e Event) String(name string) string {
	var s string
	if raw, ok := e.Data[name]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// Post decodes data.post, which the server sends as a JSON-encoded string.
func (e Event) Post() (Post, error) {
	var p Post
	err := json.Unmarshal([]byte(e.String("post")), &p)
	return p, err
}

// Reaction decodes data.reaction, a JSON-encoded string like data.post.
func (e Event) Reaction() (Reaction, error) {
	var r Reaction
	err := json.Unmarshal([]byte(e.String("reaction")), &r)
	return r, err
}
