package mattermost

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Me returns the bot's own user and the server's clock at the reply.
func (c *Client) Me(ctx context.Context) (User, time.Time, error) {
	var u User
	date, err := c.call(ctx, http.MethodGet, "/api/v4/users/me", nil, nil, &u)
	return u, date, err
}

// UnsafeLinksProp is the post prop (model.PostPropsUnsafeLinks) by which
// the server knows a post's links as ones it must not preview or embed.
const UnsafeLinksProp = "unsafe_links"

// CreatePost creates p (channel_id, message, and root_id for a reply), with
// the unsafe_links prop set: nothing the bot posts gets a link preview.
func (c *Client) CreatePost(ctx context.Context, p Post) (Post, error) {
	p.Props = maps.Clone(p.Props)
	if p.Props == nil {
		p.Props = map[string]any{}
	}
	// The server's mark for a post whose links it must not preview or
	// embed: the bot posts what a model wrote, which names URLs nobody
	// granted a fetch of.
	p.Props[UnsafeLinksProp] = "true"
	var out Post
	_, err := c.call(ctx, http.MethodPost, "/api/v4/posts", nil, p, &out)
	return out, err
}

// PatchPost replaces the message of the bot's own post.
func (c *Client) PatchPost(ctx context.Context, id, message string) (Post, error) {
	var out Post
	_, err := c.call(ctx, http.MethodPut, "/api/v4/posts/"+url.PathEscape(id)+"/patch", nil,
		map[string]string{"message": message}, &out)
	return out, err
}

// GetPost returns one post.
func (c *Client) GetPost(ctx context.Context, id string) (Post, error) {
	var out Post
	_, err := c.call(ctx, http.MethodGet, "/api/v4/posts/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// PostsSince returns a channel's posts created or changed after since (Unix
// ms), oldest first.
func (c *Client) PostsSince(ctx context.Context, channel string, since int64) ([]Post, error) {
	var list PostList
	q := url.Values{"since": {strconv.FormatInt(since, 10)}}
	_, err := c.call(ctx, http.MethodGet, "/api/v4/channels/"+url.PathEscape(channel)+"/posts", q, nil, &list)
	return list.sorted(), err
}

// Thread returns the thread a post is in, root first, oldest first.
func (c *Client) Thread(ctx context.Context, postID string) ([]Post, error) {
	var list PostList
	_, err := c.call(ctx, http.MethodGet, "/api/v4/posts/"+url.PathEscape(postID)+"/thread", nil, nil, &list)
	return list.sorted(), err
}

// Reactions lists the reactions on a post.
func (c *Client) Reactions(ctx context.Context, postID string) ([]Reaction, error) {
	var out []Reaction
	_, err := c.call(ctx, http.MethodGet, "/api/v4/posts/"+url.PathEscape(postID)+"/reactions", nil, nil, &out)
	return out, err
}

// DirectChannel returns the direct channel between two users, creating it
// if needed.
func (c *Client) DirectChannel(ctx context.Context, a, b string) (Channel, error) {
	var out Channel
	_, err := c.call(ctx, http.MethodPost, "/api/v4/channels/direct", nil, []string{a, b}, &out)
	return out, err
}

// sorted returns the posts by create_at: the server's order field is not
// the same for every call.
func (l PostList) sorted() []Post {
	out := make([]Post, 0, len(l.Posts))
	for _, p := range l.Posts {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Post) int {
		return cmp.Or(cmp.Compare(a.CreateAt, b.CreateAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}
