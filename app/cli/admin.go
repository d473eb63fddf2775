package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/web"
)

// adminAPI reaches the running server's admin API. The server holds the
// data file, so commands that need it go through the API: on the box,
// through the local socket (localsock.go) as the Unix user who runs them;
// else on the configured listen address, or the -url given, with a token
// or a password.
type adminAPI struct {
	cmd    string
	config string
	listen string
	base   string
	user   string
	pass   string
	// token, when set, is sent as a Bearer token instead of user and pass.
	token string
	// socket is the local socket's path when the requests go there: they
	// carry no credential.
	socket string
	// passFrom names the credential used (never its value), for errors.
	passFrom string
	client   *http.Client
}

// adminFlags adds the flags of a command that calls the admin API: those
// of configFlags and -url.
func adminFlags(fs *flag.FlagSet) *configOptions {
	opts := configFlags(fs)
	opts.url = fs.String("url", "", "the server's address from another machine (https://hooks.example.com), with HOOKBOX_TOKEN; the config is not read")
	return opts
}

// newAdminAPI prepares requests for command cmd, to the server the first
// of these names: -url (another machine: with HOOKBOX_TOKEN, or
// HOOKBOX_USER and HOOKBOX_PASSWORD); the config's server.listen with
// HOOKBOX_TOKEN or HOOKBOX_PASSWORD when one is set; the local socket of
// the server on this box, as the Unix user who runs the command; the
// config's server.listen with its [status] password.
func newAdminAPI(cmd string, opts *configOptions, timeout time.Duration) (*adminAPI, error) {
	if opts.url != nil && *opts.url != "" {
		return remoteAPI(cmd, *opts.url, timeout)
	}
	path := *opts.path
	var paths, tried []string
	if os.Getenv("HOOKBOX_TOKEN") == "" && os.Getenv("HOOKBOX_PASSWORD") == "" {
		// Only the data directory is read: the secrets the config names
		// are in the service's environment, not the caller's.
		dataDir, _ := config.LoadDataDirWith(path, opts.overrides())
		paths = clientSocketPaths(dataDir)
		var sock string
		if sock, tried = dialLocal(paths); sock != "" {
			return localAPI(cmd, path, sock, timeout), nil
		}
	}
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
		return nil, fmt.Errorf("hookbox %s: no credential: set HOOKBOX_TOKEN (a token from hookbox token create), or HOOKBOX_USER and HOOKBOX_PASSWORD (the password generated at first start is the user %s's), or [status] password in %s%s", cmd, cfg.Status.User, path, localHint(paths, tried))
	}
	a.pass, a.passFrom = cfg.Status.Password, fmt.Sprintf("user %q with [status] password or password_env in %s", a.user, path)
	return a, nil
}

// localAPI sends cmd's requests to the local socket at sock.
func localAPI(cmd, config, sock string, timeout time.Duration) *adminAPI {
	who := "local:unknown"
	if u, err := user.Current(); err == nil {
		who = "local:" + u.Username
	}
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
	return &adminAPI{cmd: cmd, config: config, socket: sock, base: "http://local/api/v1", client: client,
		passFrom: fmt.Sprintf("the local socket %s (as %s)", sock, who)}
}

// remoteAPI sends cmd's requests to the server at raw (-url) with the
// credential of the environment: HOOKBOX_TOKEN, else HOOKBOX_USER
// (default admin) and HOOKBOX_PASSWORD.
func remoteAPI(cmd, raw string, timeout time.Duration) (*adminAPI, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("hookbox %s: -url %q: give the server's address, as https://hooks.example.com", cmd, raw)
	}
	base := strings.TrimSuffix(u.String(), "/")
	a := &adminAPI{cmd: cmd, listen: base, base: base + "/api/v1", client: &http.Client{Timeout: timeout}}
	if tok := os.Getenv("HOOKBOX_TOKEN"); tok != "" {
		a.token, a.passFrom = tok, "the token in HOOKBOX_TOKEN"
		return a, nil
	}
	a.user = cmp.Or(os.Getenv("HOOKBOX_USER"), app.DefaultStatusUser)
	if pw := os.Getenv("HOOKBOX_PASSWORD"); pw != "" {
		a.pass, a.passFrom = pw, fmt.Sprintf("user %q with the password in HOOKBOX_PASSWORD", a.user)
		return a, nil
	}
	return nil, fmt.Errorf("hookbox %s: -url %s needs a credential: set HOOKBOX_TOKEN (a token from hookbox token create, run on the box), or HOOKBOX_USER and HOOKBOX_PASSWORD", cmd, base)
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

// call sends a request (body: JSON, none when nil) and returns the answer
// when the server answered 200 OK; else it prints why to stderr (the
// server out of reach, or what it answered) and returns nil. The caller
// closes the body.
func (a *adminAPI) call(method, path string, body []byte, stderr io.Writer) *http.Response {
	resp, err := a.doJSON(method, path, body)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "hookbox %s: the server answered %d: %s\n", a.cmd, resp.StatusCode, readAnswer(resp.Body))
		resp.Body.Close()
		return nil
	}
	return resp
}

// send sends req with the CLI's credential and turns the answers that
// refuse it (401, 403, 429) into errors. The caller closes the body.
func (a *adminAPI) send(req *http.Request) (*http.Response, error) {
	switch {
	case a.socket != "": // the kernel tells the server who we are
	case a.token != "":
		req.Header.Set("Authorization", "Bearer "+a.token)
	default:
		req.SetBasicAuth(a.user, a.pass)
	}
	resp, err := a.client.Do(req)
	switch {
	case err == nil:
	case a.socket != "":
		return nil, fmt.Errorf("hookbox %s: the local socket %s: %v", a.cmd, a.socket, errors.Unwrap(err))
	case a.config == "": // -url
		return nil, fmt.Errorf("hookbox %s: is hookbox running at %s? %v", a.cmd, a.listen, errors.Unwrap(err))
	default:
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
