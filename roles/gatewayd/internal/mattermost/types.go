package mattermost

import (
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
