package toolkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"

	"golang.org/x/net/html/charset"
)

// maxBody bounds a response body toolkit reads; egressd has its own cap.
const maxBody = 8 << 20

const userAgent = "boxmaker"

// httpFetch fetches the URL through egressd (GET, as its catalog row
// says) and returns the page as text.
func (t *tools) httpFetch(_ context.Context, a wire.HTTPFetchArgs) toolrun.Output {
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return failed("http_fetch", "%q is not an http(s) URL", a.URL)
	}
	req, err := t.newEgressRequest(a.URL, nil)
	if err != nil {
		return failed("http_fetch", "%v", err)
	}
	req.Header.Set("Accept", "text/html, text/*;q=0.9, application/json;q=0.8")
	resp, body, err := t.roundTrip(req)
	if err != nil {
		return failed("http_fetch", "%v", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return failed("http_fetch", "%s", statusReason(resp, body))
	}
	text, err := pageText(resp.Header.Get("Content-Type"), body, u)
	if err != nil {
		return failed("http_fetch", "%v", err)
	}
	return succeeded(text)
}

// newEgressRequest makes a request with the method the tool's catalog row
// names, which is the one method brokerd asked egressd to let through.
func (t *tools) newEgressRequest(target string, body io.Reader) (*http.Request, error) {
	tool, _ := wire.ToolByName(t.job.Tool)
	return http.NewRequest(tool.Sandbox.Egress.Method, target, body)
}

// roundTrip sends req in absolute form over the egress connection, the way
// a client talks to a proxy, and reads the response and up to maxBody
// bytes of its body. egressd decides whether the host may be reached.
func (t *tools) roundTrip(req *http.Request) (*http.Response, []byte, error) {
	if t.egress == nil {
		return nil, nil, errors.New("this run has no egress connection")
	}
	req.Header.Set("User-Agent", userAgent)
	req.Close = true // one request per connection
	if err := req.WriteProxy(t.egress); err != nil {
		return nil, nil, fmt.Errorf("send request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(t.egress), req)
	if err != nil {
		return nil, nil, fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, nil, fmt.Errorf("the response is %s-encoded, which toolkit does not decode", enc)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	return resp, body, nil
}

// pageText turns a body into text: HTML rendered readable, other text kept
// as it is (converted to UTF-8), anything else refused.
func pageText(contentType string, body []byte, base *url.URL) (string, error) {
	if contentType == "" {
		contentType = http.DetectContentType(body)
	}
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("content type %q: %v", contentType, err)
	}
	if !isText(media) {
		return "", fmt.Errorf("refusing %s: not a text type", media)
	}
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return "", fmt.Errorf("charset: %v", err)
	}
	if media == "text/html" || media == "application/xhtml+xml" {
		return htmlText(r, base)
	}
	text, err := io.ReadAll(r)
	return string(text), err
}

// isText reports whether a media type is text a model can read.
func isText(media string) bool {
	switch {
	case strings.HasPrefix(media, "text/"), strings.HasSuffix(media, "+json"), strings.HasSuffix(media, "+xml"):
		return true
	}
	switch media {
	case "application/json", "application/xml", "application/javascript", "application/xhtml+xml",
		"application/x-yaml", "application/yaml", "application/toml":
		return true
	}
	return false
}

// chatRequest and chatResponse are the parts of an OpenAI-style chat
// completion consult uses; unknown members of the reply are ignored.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// consult posts the prompt to the configured hosted model (its catalog
// row says POST, to the consult endpoint). The Authorization header is
// not here: egressd adds it outside the sandbox.
func (t *tools) consult(_ context.Context, a wire.ConsultArgs) toolrun.Output {
	payload, err := json.Marshal(chatRequest{
		Model:    t.job.Consult.Model,
		Messages: []chatMessage{{Role: "user", Content: a.Prompt}},
	})
	if err != nil {
		return failed("consult", "%v", err)
	}
	req, err := t.newEgressRequest(t.job.Consult.URL, bytes.NewReader(payload))
	if err != nil {
		return failed("consult", "%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, body, err := t.roundTrip(req)
	if err != nil {
		return failed("consult", "%v", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return failed("consult", "%s", statusReason(resp, body))
	}
	var answer chatResponse
	if err := json.Unmarshal(body, &answer); err != nil {
		return failed("consult", "the reply is not a chat completion: %v", err)
	}
	if len(answer.Choices) == 0 || answer.Choices[0].Message.Content == nil {
		return failed("consult", "the reply has no answer")
	}
	return succeeded(*answer.Choices[0].Message.Content)
}
