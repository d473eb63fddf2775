package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"hookbox/app"
)

// Bounds of what a provider's API may make hookbox hold or wait for.
const (
	// MaxAnswer bounds one answer's body (a page of 100 Stripe events).
	MaxAnswer = 16 << 20
	// maxAnswerHeader bounds an answer's header.
	maxAnswerHeader = 64 << 10
	// CallTimeout bounds one call, its answer read.
	CallTimeout = 30 * time.Second
	// maxPages bounds the pages one check reads of a list.
	maxPages = 200
	// maxMessage bounds a provider's error message kept in a result.
	maxMessage = 200
)

// NewClient returns the client the checker calls providers with: no
// redirect followed (an answer 3xx is a failure), no proxy (the API is
// called as configured), answers' headers bounded, nothing inflated
// behind hookbox's back, each call within CallTimeout.
func NewClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxResponseHeaderBytes = maxAnswerHeader
	t.DisableCompression = true
	return &http.Client{
		Transport:     t,
		Timeout:       CallTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// apiError is a provider's refusal or failure, as a result shows it.
type apiError struct {
	Status     int
	RetryAfter time.Time // zero: none given
	msg        string
}

func (e *apiError) Error() string { return e.msg }

// api calls one provider's API for one check.
type api struct {
	client   *http.Client
	base     string // api_url
	key      string
	provider string
	// header sets the provider's authentication and version headers.
	header func(h http.Header)
	now    func() time.Time
	calls  int
}

// call sends method path (under base; a full URL on base's host too, for
// GitHub's Link) with body, and decodes a 2xx answer's JSON into out
// (nil: read and dropped). It returns the answer's header.
func (a *api) call(ctx context.Context, method, path string, body []byte, contentType string, out any) (http.Header, error) {
	u := path
	if !strings.HasPrefix(path, a.base+"/") {
		u = a.base + path
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, a.shown(path), err)
	}
	a.header(req.Header)
	req.Header.Set("User-Agent", "hookbox")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	a.calls++
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, a.scrub(fmt.Errorf("%s %s: %w", method, a.shown(path), app.SendError(ctx, err, a.client.Timeout)))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return nil, a.scrub(fmt.Errorf("%s %s: reading the answer: %w", method, a.shown(path), app.SendError(ctx, err, a.client.Timeout)))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, a.refusal(method, path, resp, data)
	}
	if len(data) > MaxAnswer {
		return nil, fmt.Errorf("%s %s: the answer is larger than %d MiB", method, a.shown(path), MaxAnswer>>20)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, a.shown(path), err)
		}
	}
	return resp.Header, nil
}

// refusal turns a non-2xx answer into an apiError that says what to do.
func (a *api) refusal(method, path string, resp *http.Response, data []byte) error {
	name := providerName(a.provider)
	e := &apiError{Status: resp.StatusCode}
	msg := a.scrubText(providerMessage(data))
	if msg != "" && resp.StatusCode != http.StatusUnauthorized {
		msg = ": " + msg
	} else {
		msg = ""
	}
	where := fmt.Sprintf("%s %s", method, a.shown(path))
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized:
		e.msg = fmt.Sprintf("%s: %s refused the API key (401): check the key api_key_env names", where, name)
	case s == http.StatusForbidden:
		e.msg = fmt.Sprintf("%s: the API key may not do this (403)%s: give the key the permission the README names", where, msg)
	case s == http.StatusNotFound:
		e.msg = fmt.Sprintf("%s: %s knows no such endpoint (404)%s: check endpoint and that the key is the account's", where, name, msg)
	case s == http.StatusTooManyRequests:
		e.RetryAfter = retryAfter(resp.Header, a.now())
		e.msg = fmt.Sprintf("%s: %s's rate limit (429)", where, name)
		if !e.RetryAfter.IsZero() {
			e.msg += ": not called again before " + e.RetryAfter.UTC().Format(time.RFC3339)
		}
	case s >= 300 && s < 400:
		e.msg = fmt.Sprintf("%s: %s answered a redirect (%d), which hookbox does not follow: check api_url", where, name, s)
	case s >= 500:
		e.msg = fmt.Sprintf("%s: %s's API failed (HTTP %d)%s; the next check tries again", where, name, s, msg)
	default:
		e.msg = fmt.Sprintf("%s: %s answered HTTP %d%s", where, name, s, msg)
	}
	if s := resp.StatusCode; s == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		// GitHub's primary rate limit answers 403 with its reset time.
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			e.RetryAfter = time.Unix(reset, 0)
			e.msg = fmt.Sprintf("%s: %s's rate limit (403): not called again before %s", where, name, e.RetryAfter.UTC().Format(time.RFC3339))
		}
	}
	return e
}

// retryAfter reads Retry-After (seconds or an HTTP date), zero when absent
// or unreadable; at most a day ahead.
func retryAfter(h http.Header, now time.Time) time.Time {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return time.Time{}
	}
	var at time.Time
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		at = now.Add(time.Duration(s) * time.Second)
	} else if t, err := http.ParseTime(v); err == nil {
		at = t
	} else {
		return time.Time{}
	}
	if limit := now.Add(24 * time.Hour); at.After(limit) {
		return limit
	}
	return at
}

// providerMessage reads the message of a provider's error answer:
// Stripe's {"error": {"message"}}, GitHub's {"message"}.
func providerMessage(data []byte) string {
	var v struct {
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	m := v.Error.Message
	if m == "" {
		m = v.Message
	}
	m = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, m)
	if len(m) > maxMessage {
		m = strings.ToValidUTF8(m[:maxMessage], "") + "…"
	}
	return m
}

// shown is path as a result shows it: without its query's cursor.
func (a *api) shown(path string) string {
	path = strings.TrimPrefix(path, a.base)
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path
}

// scrub and scrubText take the key out of what a result shows, whatever
// a provider or a library put in it.
func (a *api) scrub(err error) error {
	if a.key == "" || !strings.Contains(err.Error(), a.key) {
		return err
	}
	return errors.New(a.scrubText(err.Error()))
}

func (a *api) scrubText(s string) string {
	if a.key == "" {
		return s
	}
	return strings.ReplaceAll(s, a.key, "…")
}

// providerName is a provider's name as a sentence writes it.
func providerName(p string) string {
	switch p {
	case "github":
		return "GitHub"
	case "stripe":
		return "Stripe"
	case "woocommerce":
		return "WooCommerce"
	case "shopify":
		return "Shopify"
	}
	return p
}
