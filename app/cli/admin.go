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
	// passFrom says where pass came from, for the error of a wrong one.
	passFrom string
	client   *http.Client
}

// newAdminAPI loads the config at path and prepares requests for command
// cmd, logging in with [status] password, or with HOOKBOX_PASSWORD when
// the server generated its password at first start.
func newAdminAPI(cmd string, opts *configOptions, timeout time.Duration) (*adminAPI, error) {
	path := *opts.path
	cfg, err := opts.load()
	if err != nil {
		return nil, err
	}
	pass := cfg.Status.Password
	if pass == "" {
		pass = os.Getenv("HOOKBOX_PASSWORD")
	}
	if pass == "" {
		return nil, fmt.Errorf("hookbox %s: %s: status.password: not set; set it (or password_env), or give the password generated at first start in HOOKBOX_PASSWORD", cmd, path)
	}
	base, client := web.LocalClient(cfg.Server, timeout)
	from := "HOOKBOX_PASSWORD"
	if cfg.Status.Password != "" {
		from = "[status] password or password_env in " + path
	}
	return &adminAPI{cmd: cmd, config: path, listen: cfg.Server.Listen, base: base + "/api/v1",
		user: cfg.Status.User, pass: pass, passFrom: from, client: client}, nil
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
	req.SetBasicAuth(a.user, a.pass)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hookbox %s: is hookbox running on %s (server.listen in %s)? %v", a.cmd, a.listen, a.config, errors.Unwrap(err))
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized: // credentials were sent: they are wrong
		resp.Body.Close()
		return nil, fmt.Errorf("hookbox %s: the server answered 401: wrong user or password (user %q from [status] user, password from %s); hookbox passwd sets a new one", a.cmd, a.user, a.passFrom)
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
