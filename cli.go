package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/app/provider"
	"hookbox/app/template"
	"hookbox/app/web"
)

// buildTime may be set at build time with -ldflags "-X main.buildTime=…";
// without it `hookbox version` gives the executable's modification time.
var buildTime = ""

// command is one subcommand: its synopsis and description for -h, and the
// function that runs it with the arguments after its name.
type command struct {
	name     string
	synopsis string
	summary  string
	help     string
	run      func(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order usage shows them.
var commands = []*command{
	{name: "serve", synopsis: "[-config FILE] [-log-level LEVEL]", summary: "serve (the default command)",
		help: "Serves webhooks on server.listen until SIGTERM or SIGINT.", run: runServe},
	{name: "check", synopsis: "[-config FILE]", summary: "validate the config and print a summary",
		help: "Validates the config as serve would and lists each source with the URL to paste\n" +
			"into the platform's webhook settings. Exit 1 with one line naming the file and key.", run: runCheck},
	{name: "sign", synopsis: "[-config FILE] -source NAME [-topic T] [-id ID] [-send] FILE|-",
		summary: "print (or -send) a correctly signed test request",
		help: "Signs the body in FILE (or stdin for -) as the source's provider would, with the\n" +
			"source's first secret, and prints a curl command; -send posts it to the running\n" +
			"server on server.listen and prints the answer (exit 1 unless 2xx).\n" +
			"Stripe, Paddle, Square and BigCommerce read the event id from the body, and they\n" +
			"and Standard Webhooks the topic: the body must carry them. Elsewhere -id sets the\n" +
			"id (default: a random one) and -topic the topic; for a source with id or topic\n" +
			"templates, they fill the headers the templates name.", run: runSign},
	{name: "replay", synopsis: "[-config FILE] -all | ID...", summary: "replay dead deliveries through the running server",
		help: "Replays every dead delivery (-all) or the deliveries with the given ids through\n" +
			"the running server's admin API ([status] user and password).", run: runReplay},
	{name: "backup", synopsis: "[-config FILE] -o FILE", summary: "save a hot copy of the data file from the running server",
		help: "Downloads a consistent copy of the data file through the running server's admin\n" +
			"API ([status] user and password), writes it to FILE atomically and checks it.\n" +
			"To restore: stop hookbox, then hookbox restore FILE.", run: runBackup},
	{name: "restore", synopsis: "[-config FILE] [-check] FILE", summary: "put a backup in place of the data file (hookbox stopped)",
		help: restoreHelp, run: runRestore},
	{name: "bench", synopsis: "[-config FILE] -source NAME [-url URL] [-c N] [-rate R] [-d DUR] [-size B] [-dup F] [-json FILE] | -compare [-provider P]",
		summary: "load a server with signed webhooks and measure it",
		help: "Sends webhooks signed for the source's provider, closed loop (-c connections) or\n" +
			"open loop (-rate requests/s; latency counted from each request's scheduled time),\n" +
			"and prints throughput, p50/p90/p99/max latency and counts by status.\n" +
			"-compare runs, in this process, a verify-only Fiber server and a real hookbox with a\n" +
			"route to a local sink, loads both the same way and prints the ratio.", run: runBench},
	{name: "version", synopsis: "", summary: "print the version, commit and build time",
		help: "Prints the version, the VCS commit and the build time of this binary.", run: runVersion},
}

// findCommand returns the subcommand called name, or nil.
func findCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// printUsage writes the list of commands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "hookbox receives webhooks, verifies them and stores each event once.\n\nUsage:\n")
	for _, c := range commands {
		line := "  hookbox " + c.name
		if c.synopsis != "" {
			line += " " + c.synopsis
		}
		fmt.Fprintln(w, line)
		fmt.Fprintf(w, "        %s\n", c.summary)
	}
	fmt.Fprint(w, "\nRun 'hookbox COMMAND -h' for the flags of a command.\n")
}

// flags returns the flag set of c; its usage is printed by parse.
func (c *command) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// usage writes c's own help with its flags.
func (c *command) usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: hookbox %s %s\n\n%s\n", c.name, c.synopsis, c.help)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// parse parses args into fs, flags and operands in any order (so that
// `sign body.json -send` works). It returns the operands, or an exit code
// >= 0 when the command must stop: 0 after -h (help on stdout), 2 on a bad
// flag (the error on stderr).
func (c *command) parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int) {
	var operands []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.usage(fs, stdout)
			return nil, 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "hookbox %s: %v\nRun 'hookbox %s -h' for usage.\n", c.name, err, c.name)
			return nil, 2
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return operands, -1
		}
		// After "--" everything is an operand.
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(operands, rest...), -1
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// parseNone is parse for a command that takes no operands.
func (c *command) parseNone(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(operands) > 0 {
		fmt.Fprintf(stderr, "hookbox %s: unexpected argument %q\n", c.name, operands[0])
		return 2
	}
	return -1
}

// configFlag adds the -config flag every command but version has.
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "config.toml", "path of the config file")
}

func runCheck(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	return check(*path, stdout, stderr)
}

func check(path string, stdout, stderr io.Writer) int {
	cfg, err := app.LoadConfig(path, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\nlisten %s, data in %s\n", path, cfg.Server.Listen, dataWhere(cfg))
	printTLSAndBackups(stdout, cfg)
	for _, s := range cfg.Sources {
		fmt.Fprintf(stdout, "source %-16s %-12s POST %s\n", s.Name, s.Provider, s.URL)
	}
	// Unsafe modes are warnings: the config works, but others may read it.
	for _, w := range app.FileModeWarnings(path, cfg.Server.DataDir) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return 0
}

// localBase returns http://host:port for reaching the server on listen from
// this machine: an unspecified host (0.0.0.0, ::, empty) becomes 127.0.0.1.
func localBase(listen string) string {
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

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
	client *http.Client
}

// newAdminAPI loads the config at path and prepares requests for command
// cmd, logging in with [status] password, or with HOOKBOX_PASSWORD when
// the server generated its password at first start.
func newAdminAPI(cmd, path string, timeout time.Duration) (*adminAPI, error) {
	cfg, err := app.LoadConfig(path, nil)
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
	return &adminAPI{cmd: cmd, config: path, listen: cfg.Server.Listen, base: base + "/api/v1",
		user: cfg.Status.User, pass: pass, client: client}, nil
}

// do sends one request to path under /api/v1. The caller closes the body.
func (a *adminAPI) do(method, path string) (*http.Response, error) {
	req, err := http.NewRequest(method, a.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(a.user, a.pass)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hookbox %s: is hookbox running on %s (server.listen in %s)? %v", a.cmd, a.listen, a.config, errors.Unwrap(err))
	}
	return resp, nil
}

// readAnswer returns the start of an answer's body, trimmed, for printing.
func readAnswer(r io.Reader) string {
	body, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	return strings.TrimSpace(string(body))
}

func runReplay(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	all := fs.Bool("all", false, "replay every dead delivery")
	ids, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	return replay(*path, *all, ids, stdout, stderr)
}

// replay asks the running server to replay dead deliveries.
func replay(path string, all bool, ids []string, stdout, stderr io.Writer) int {
	if all == (len(ids) > 0) {
		fmt.Fprintln(stderr, "hookbox replay: give -all or delivery ids, not both or neither")
		return 2
	}
	paths := []string{"/dead-letters/replay"}
	if !all {
		paths = paths[:0]
		for _, id := range ids {
			if _, err := strconv.ParseUint(id, 10, 64); err != nil {
				fmt.Fprintf(stderr, "hookbox replay: %q is not a delivery id\n", id)
				return 2
			}
			paths = append(paths, "/deliveries/"+id+"/replay")
		}
	}
	api, err := newAdminAPI("replay", path, 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	code := 0
	for _, p := range paths {
		resp, err := api.do(http.MethodPost, p)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, readAnswer(resp.Body))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			code = 1
		}
	}
	return code
}

func runBackup(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	out := fs.String("o", "", "the file to write the backup to (required)")
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if *out == "" || len(operands) > 0 {
		fmt.Fprintln(stderr, "hookbox backup: give the output file with -o FILE, and nothing else")
		return 2
	}
	if refuseOnPostgres("backup", *path, stderr) {
		return 1
	}
	api, err := newAdminAPI("backup", *path, 10*time.Minute)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	n, err := backup(api, *out)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d bytes, bbolt check passed\n", *out, n)
	return 0
}

// backup downloads the data file into a temp file next to out, syncs and
// checks it, then renames it over out: out is either the old file or a
// complete, checked copy, never half a download.
func backup(api *adminAPI, out string) (int64, error) {
	resp, err := api.do(http.MethodGet, "/backup")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("hookbox backup: the server answered %d: %s", resp.StatusCode, readAnswer(resp.Body))
	}
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: download: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return 0, fmt.Errorf("hookbox backup: download cut short: %d of %d bytes", n, resp.ContentLength)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("hookbox backup: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("hookbox backup: close %s: %w", tmp, err)
	}
	if err := checkBolt(tmp); err != nil {
		return 0, fmt.Errorf("hookbox backup: the downloaded copy is damaged, %s left as it was: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	done = true
	// The rename is durable once the directory is synced.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return n, nil
}

// checkBolt opens the bbolt file at path read-only and runs its
// consistency check; it returns the first problem found.
func checkBolt(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: the checker runs until done
			if first == nil {
				first = err
			}
		}
		return first
	})
}

func runVersion(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	fmt.Fprintln(stdout, versionLine())
	return 0
}

// versionLine describes this binary on one line: the version (the ldflags
// value, else the module version, else "dev"), the commit, the build time
// and the Go version.
func versionLine() string {
	v, commit, committed, modified, goVersion := version, "", "", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				committed = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	var parts []string
	if commit != "" {
		c := "commit " + commit[:min(12, len(commit))]
		if modified {
			c += "+modified"
		}
		if committed != "" {
			c += " of " + committed
		}
		parts = append(parts, c)
	}
	built := buildTime
	if built == "" {
		if exe, err := os.Executable(); err == nil {
			if fi, err := os.Stat(exe); err == nil {
				built = fi.ModTime().UTC().Format(time.RFC3339)
			}
		}
	}
	if built != "" {
		parts = append(parts, "built "+built)
	}
	if goVersion != "" {
		parts = append(parts, goVersion)
	}
	if len(parts) == 0 {
		return "hookbox " + v
	}
	return "hookbox " + v + " (" + strings.Join(parts, ", ") + ")"
}

// bodyFields names where providers that read the event id and topic from
// the body find them.
var bodyFields = map[string][2]string{
	"stripe":      {"id", "type"},
	"paddle":      {"event_id", "event_type"},
	"square":      {"event_id", "type"},
	"bigcommerce": {"hash", "scope"},
	"standard":    {"", "type"},
}

// headerField finds {header.Name} fields in a template's text.
var headerField = regexp.MustCompile(`\{header\.([^{}]+)\}`)

func runSign(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	sourceName := fs.String("source", "", "the [[source]] to sign for (required)")
	topic := fs.String("topic", "", "the event topic, for providers that read it from a header")
	id := fs.String("id", "", "the event id, for providers that read it from a header (default: random)")
	send := fs.Bool("send", false, "post the request to the running server and print its answer")
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if *sourceName == "" || len(operands) != 1 {
		fmt.Fprintln(stderr, "hookbox sign: give -source NAME and one body file (or - for stdin)\nRun 'hookbox sign -h' for usage.")
		return 2
	}
	cfg, err := app.LoadConfig(*path, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	src := cfg.SourceByName(*sourceName)
	if src == nil {
		var names []string
		for _, s := range cfg.Sources {
			names = append(names, s.Name)
		}
		fmt.Fprintf(stderr, "hookbox sign: %s has no [[source]] named %q (it has: %s)\n", *path, *sourceName, strings.Join(names, ", "))
		return 1
	}
	file := operands[0]
	var body []byte
	if file == "-" {
		body, err = io.ReadAll(os.Stdin)
	} else {
		body, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: read the body: %v\n", err)
		return 1
	}
	if len(body) > cfg.Server.MaxBodyBytes {
		fmt.Fprintf(stderr, "hookbox sign: the body is %d bytes, over server.max_body_bytes (%d): the server would answer 413\n", len(body), cfg.Server.MaxBodyBytes)
		return 1
	}
	req, err := signRequest(src, body, *id, *topic, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: %v\n", err)
		return 1
	}
	if *send {
		return sendSigned(cfg, src, body, req, stdout, stderr)
	}
	url := src.URL
	if cfg.Server.PublicURL == "" {
		url = localBase(cfg.Server.Listen) + src.URL
	}
	cmd, err := curlCommand(url, req, body, file)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, cmd)
	switch src.Provider {
	case "stripe", "paddle", "standard", "bigcommerce":
		fmt.Fprintf(stderr, "hookbox sign: the signature is timestamped: run the command within %v\n", src.Settings.Tolerance)
	}
	return 0
}

// signRequest returns the headers that make body a genuine request for
// src, with id and topic where the provider (or the source's id and topic
// templates) reads them from headers. It then checks the request the way
// the server will, so a body without its event id fails here, clearly.
func signRequest(src *app.Source, body []byte, id, topic string, now time.Time) (http.Header, error) {
	idHeaders := templateHeaders(src.ID)
	topicHeaders := templateHeaders(src.Topic)
	fields, bodyRules := bodyFields[src.Provider]
	idInBody := src.ID == nil && bodyRules && fields[0] != ""
	if src.ID != nil {
		idInBody = len(idHeaders) == 0
	}
	if src.Provider == "woocommerce" && src.ID == nil {
		idInBody = true // the id is the body's SHA-256
	}
	if id != "" && idInBody {
		return nil, fmt.Errorf("-id: source %q (%s) takes the event id from the body%s; put it there", src.Name, src.Provider, fieldNote(src.ID, fields[0]))
	}
	topicInBody := src.Topic == nil && bodyRules
	if src.Topic != nil {
		topicInBody = len(topicHeaders) == 0
	}
	if topic != "" && topicInBody {
		return nil, fmt.Errorf("-topic: source %q (%s) takes the topic from the body%s; put it there", src.Name, src.Provider, fieldNote(src.Topic, fields[1]))
	}
	if id == "" && !idInBody {
		id = randomEventID()
	}
	signID := id
	if src.ID != nil {
		signID = "" // the id goes into the template's headers instead
	}
	h, err := provider.Sign(src.Provider, src.Settings, body, src.URL, signID, topic, now)
	if err != nil {
		return nil, fmt.Errorf("source %q (%s): %w", src.Name, src.Provider, err)
	}
	for _, name := range idHeaders {
		if h.Get(name) == "" {
			h.Set(name, id)
		}
	}
	for _, name := range topicHeaders {
		if h.Get(name) == "" && topic != "" {
			h.Set(name, topic)
		}
	}
	// What the server does with it: verify, then find the event id.
	v, err := src.Verify(provider.Request{Body: body, Header: h, URL: src.URL}, now)
	if err != nil {
		return nil, fmt.Errorf("source %q (%s): the signed request does not verify: %w", src.Name, src.Provider, err)
	}
	gotTopic := v.Topic
	if src.Topic != nil {
		gotTopic, _ = src.Topic.Render(template.Input{Body: body, Header: h, Source: src.Name, Topic: v.Topic})
	}
	gotID := v.ID
	if src.ID != nil {
		if gotID, err = src.ID.Render(template.Input{Body: body, Header: h, Source: src.Name, Topic: gotTopic}); err != nil {
			return nil, fmt.Errorf("source %q: the server would answer 400: no event id: %w (id = %q)", src.Name, err, src.ID.String())
		}
	}
	if gotID == "" {
		return nil, fmt.Errorf("source %q (%s): the server would answer 400: the body has no event id%s", src.Name, src.Provider, fieldNote(nil, fields[0]))
	}
	return h, nil
}

// fieldNote names the body field an id or topic comes from, for errors.
func fieldNote(t *template.Template, field string) string {
	switch {
	case t != nil:
		return fmt.Sprintf(" (template %q)", t.String())
	case field != "":
		return fmt.Sprintf(" (field %q)", field)
	}
	return ""
}

// templateHeaders lists the headers a template reads.
func templateHeaders(t *template.Template) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, m := range headerField.FindAllStringSubmatch(t.String(), -1) {
		out = append(out, m[1])
	}
	return out
}

// randomEventID returns a fresh id for a test event.
func randomEventID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead).
	return "test-" + hex.EncodeToString(b[:])
}

// sendSigned posts the signed request to the running server on its listen
// address and prints the status and the answer.
func sendSigned(cfg *app.Config, src *app.Source, body []byte, h http.Header, stdout, stderr io.Writer) int {
	base, client := web.LocalClient(cfg.Server, 30*time.Second)
	url := base + "/in/" + src.Name
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: %v\n", err)
		return 1
	}
	req.Header = h
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: is hookbox running on %s (server.listen in %s)? %v\n", cfg.Server.Listen, cfg.Path, errors.Unwrap(err))
		return 1
	}
	defer resp.Body.Close()
	fmt.Fprintf(stdout, "%d %s\n", resp.StatusCode, readAnswer(resp.Body))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 1
	}
	return 0
}

// curlCommand prints the request as a curl command line for a POSIX shell:
// the body from file, or inline through printf when it came from stdin.
func curlCommand(url string, h http.Header, body []byte, file string) (string, error) {
	var b strings.Builder
	if file == "-" {
		if bytes.IndexByte(body, 0) >= 0 {
			return "", errors.New("the body contains NUL bytes, which a shell command cannot carry: save it to a file and pass the file")
		}
		b.WriteString("printf '%s' " + shellQuote(string(body)) + " | ")
	}
	b.WriteString("curl -sS -w '\\n' -X POST " + shellQuote(url))
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range h[name] {
			b.WriteString(" \\\n  -H " + shellQuote(name+": "+v))
		}
	}
	if file == "-" {
		b.WriteString(" \\\n  --data-binary @-")
	} else {
		b.WriteString(" \\\n  --data-binary @" + shellQuote(file))
	}
	return b.String(), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
