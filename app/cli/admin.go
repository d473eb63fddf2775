package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"hookbox/app/web"
)

// adminAPI reaches the running server's admin API. The server holds the
// data file, so commands that need it go through the API on the configured
// listen address with the [status] login.
type adminAPI struct {
	cmd    string
	config string
	listen string
	base   string
	user   string
	pass   string
	// token, when set, is sent as a Bearer token instead of user and pass.
	token string
	// passFrom names the credential used (never its value), for errors.
	passFrom string
	client   *http.Client
}

// newAdminAPI loads the config at path and prepares requests for command
// cmd with the CLI's identity: HOOKBOX_TOKEN (sent as a Bearer token),
// else HOOKBOX_USER (default [status] user) and HOOKBOX_PASSWORD, else the
// config's [status] password.
func newAdminAPI(cmd string, opts *configOptions, timeout time.Duration) (*adminAPI, error) {
	path := *opts.path
	cfg, err := opts.load()
	if err != nil {
		return nil, err
	}
	base, client := web.LocalClient(cfg.Server, timeout)
	a := &adminAPI{cmd: cmd, config: path, listen: cfg.Server.Listen, base: base + "/api/v1", client: client}
	if tok := os.Getenv("HOOKBOX_TOKEN"); tok != "" {
		a.token, a.passFrom = tok, "the token in HOOKBOX_TOKEN"
		return a, nil
	}
	a.user = cfg.Status.User
	if u := os.Getenv("HOOKBOX_USER"); u != "" {
		a.user = u
	}
	if pw := os.Getenv("HOOKBOX_PASSWORD"); pw != "" {
		a.pass, a.passFrom = pw, fmt.Sprintf("user %q with the password in HOOKBOX_PASSWORD", a.user)
		return a, nil
	}
	if cfg.Status.Password == "" || a.user != cfg.Status.User {
		return nil, fmt.Errorf("hookbox %s: no credential: set HOOKBOX_TOKEN (a token from hookbox token create), or HOOKBOX_USER and HOOKBOX_PASSWORD (the password generated at first start is the user %s's), or [status] password in %s", cmd, cfg.Status.User, path)
	}
	a.pass, a.passFrom = cfg.Status.Password, fmt.Sprintf("user %q with [status] password or password_env in %s", a.user, path)
	return a, nil
}

// do sends one request to path under /api/v1. The caller closes the body.
func (a *adminAPI) do(method, path string) (*http.Response, error) {
	return a.doJSON(method, path, nil)
}

// doJSON is do with a JSON body (none when body is nil).
func (a *adminAPI) doJSON(method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return a.send(req)
}

// send sends req with the CLI's credential and turns the answers that
// refuse it (401, 403, 429) into errors. The caller closes the body.
func (a *adminAPI) send(req *http.Request) (*http.Response, error) {
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	} else {
		req.SetBasicAuth(a.user, a.pass)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hookbox %s: is hookbox running on %s (server.listen in %s)? %v", a.cmd, a.listen, a.config, errors.Unwrap(err))
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized: // credentials were sent: they are wrong
		resp.Body.Close()
		return nil, fmt.Errorf("hookbox %s: the server answered 401: wrong user or password, or a revoked or expired token (%s); hookbox passwd sets a new password", a.cmd, a.passFrom)
	case http.StatusForbidden:
		answer := readAnswer(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("hookbox %s: the server answered 403 to %s: %s", a.cmd, a.passFrom, answer)
	case http.StatusTooManyRequests:
		answer := readAnswer(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("hookbox %s: the server refuses logins for now after failed ones: %s", a.cmd, answer)
	}
	return resp, nil
}

// readAnswer returns the start of an answer's body, trimmed, for printing.
func readAnswer(r io.Reader) string {
	body, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	return strings.TrimSpace(string(body))
}
