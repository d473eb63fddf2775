// Package cli is hookbox's command line: the subcommands (serve, check,
// sign, route, replay, reload, backup, restore, bench, listen, version),
// one file each, and the table that dispatches to them (this file). main
// hands it the arguments.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"hookbox/app"
	"hookbox/app/config"
)

// Version is the version `hookbox version` prints and serve logs; main sets
// it from its own version, which -ldflags "-X main.version=…" sets.
var Version = "dev"

// BuildTime is the build time `hookbox version` prints; main sets it from
// -ldflags "-X main.buildTime=…". Without it the executable's modification
// time is given.
var BuildTime = ""

// Run runs the command line with args (os.Args[1:]) and returns the exit
// code; it is main without the exit, so that tests can call it. The first
// argument names the command unless it is a flag (then it is serve).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			printUsage(stdout)
			return 0
		}
		if !strings.HasPrefix(args[0], "-") {
			name, args = args[0], args[1:]
		}
	}
	if name == "help" {
		if len(args) > 0 {
			if c := findCommand(args[0]); c != nil {
				return c.run(ctx, c, []string{"-h"}, stdout, stderr)
			}
		}
		printUsage(stdout)
		return 0
	}
	c := findCommand(name)
	if c == nil {
		fmt.Fprintf(stderr, "hookbox: unknown command %q\n\n", name)
		printUsage(stderr)
		return 2
	}
	return c.run(ctx, c, args, stdout, stderr)
}

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
	{name: "serve", synopsis: "[-config FILE] [-listen ADDR] [-data-dir DIR] [-log-level LEVEL]", summary: "serve (the default command)",
		help: "Serves webhooks on server.listen until SIGTERM or SIGINT. -listen and -data-dir (and\n" +
			"$HOOKBOX_LISTEN, $HOOKBOX_DATA_DIR) override server.listen and server.data_dir; every\n" +
			"command that reads the config takes them. At the first start, once listening, it\n" +
			"generates the status page password and logs it once (hookbox passwd sets another).", run: runServe},
	{name: "check", synopsis: "[-config FILE] [-listen ADDR] [-data-dir DIR]", summary: "validate the config and print a summary",
		help: "Validates the config as serve would, tries the data directory (created and written)\n" +
			"and the listen address, and lists each source with the full URL to paste into the\n" +
			"platform's webhook settings. Exit 1 with one line naming the file and key.", run: runCheck},
	{name: "sign", synopsis: "[-config FILE] -source NAME [-topic T] [-id ID] [-shopify-headers legacy|new|both] [-send] FILE|-",
		summary: "print (or -send) a correctly signed test request",
		help: "Signs the body in FILE (or stdin for -) as the source's provider would, with the\n" +
			"source's first secret, and prints a curl command; -send posts it to the running\n" +
			"server on server.listen and prints the answer (exit 1 unless 2xx).\n" +
			"Stripe, Paddle, Square and BigCommerce read the event id from the body, and they\n" +
			"and Standard Webhooks the topic: the body must carry them. Elsewhere -id sets the\n" +
			"id (default: a random one) and -topic the topic; for a source with id or topic\n" +
			"templates, they fill the headers the templates name. For Shopify it sends the\n" +
			"headers Shopify's library requires (Topic, Shop-Domain, API-Version, Webhook-Id,\n" +
			"Event-Id, Triggered-At), as X-Shopify-* (legacy, the default), as lowercase\n" +
			"shopify-* (-shopify-headers new) or both.", run: runSign},
	{name: "replay", synopsis: "[-config FILE | -url URL] -all | [-force] ID... | [-force] -event SOURCE/ID | -since T [-until T] [-source S] [-topic T] [-destination D] [-status dead|delivered|any] [-q TEXT] [-dry-run] [-force] [-json]",
		summary: "replay deliveries (dead, by id, by event, or by query) through the running server",
		help:    replayHelp + needs(app.ActReplay, app.ActReplayDead, app.ActReplayQuery), run: runReplay},
	{name: "retry", synopsis: "[-config FILE | -url URL] [-json] ID... | -destination NAME", summary: "send waiting deliveries now, not at their next retry",
		help: retryHelp + needs(app.ActRetry, app.ActRetryDestination), run: runRetry},
	// Pause, resume (pause.go).
	{name: "pause", synopsis: "[-config FILE | -url URL] [-reason TEXT] NAME", summary: "pause a destination: nothing is sent to it, deliveries wait",
		help: pauseHelp + needs(app.ActPause), run: runPause},
	{name: "resume", synopsis: "[-config FILE | -url URL] NAME", summary: "resume a paused destination: its waiting deliveries go out in accept order",
		help: resumeHelp + needs(app.ActResume), run: runResume},
	// The sources' quarantines (quarantine.go).
	{name: "quarantine", synopsis: "list|recheck|clear [-config FILE | -url URL] [-json] SOURCE", summary: "list, recheck or clear the requests a source refused for their signature",
		help: quarantineHelp + needs(app.ActReadQuarantine, app.ActRecheck, app.ActClearQuarantine), run: runQuarantine},
	// The providers' side (upstream.go).
	{name: "upstream", synopsis: "check [-config FILE | -url URL] [-json] [SOURCE]", summary: "check the providers' side now: subscriptions on, nothing missed",
		help: upstreamHelp + needs(app.ActCheckUpstream), run: runUpstream},
	{name: "backup", synopsis: "[-config FILE | -url URL] -o FILE", summary: "save a hot copy of the data file from the running server",
		help: "Downloads a consistent copy of the data file through the running server's admin\n" +
			"API, writes it to FILE atomically and checks it.\n" +
			"To restore: stop hookbox, then hookbox restore FILE." + needs(app.ActDownloadBackup), run: runBackup},
	{name: "reload", synopsis: "[-config FILE | -url URL]", summary: "put the config file in force in the running server, and print what changed",
		help: reloadHelp + needs(app.ActReload), run: runReload},
	{name: "restore", synopsis: "[-config FILE] [-check] FILE", summary: "put a backup in place of the data file (hookbox stopped)",
		help: restoreHelp, run: runRestore},
	{name: "bench", synopsis: "[-config FILE] -source NAME [-url URL] [-c N] [-rate R] [-d DUR] [-size B] [-dup F] [-json FILE] | -compare [-provider P]",
		summary: "load a server with signed webhooks and measure it",
		help: "Sends webhooks signed for the source's provider, closed loop (-c connections) or\n" +
			"open loop (-rate requests/s; latency counted from each request's scheduled time),\n" +
			"and prints throughput, p50/p90/p99/max latency and counts by status.\n" +
			"-compare runs, in this process, a verify-only Fiber server (the ceiling), a stateless\n" +
			"relay (verify, forward to a local sink, store nothing) and a real hookbox with a route\n" +
			"to that sink, loads each the same way and prints the ratios.", run: runBench},
	{name: "route", synopsis: "test [-config FILE] -source NAME [-topic T] [-id ID] [-header 'Name: value']... FILE|-",
		summary: "show what the routes do with a body: taken or not, keys, transformed body",
		help:    routeHelp, run: runRoute},
	{name: "user", synopsis: "add NAME -role R [-generate] | list | remove NAME | role NAME R  [-config FILE] [-data-dir DIR]", summary: "manage the users of the status page and the admin API",
		help: "add reads the new user's password as passwd does (twice without echo from a terminal, or\n" +
			"one line of stdin; -generate makes one and prints it once) and sends only its bcrypt hash.\n" +
			"Works with the server running or stopped: into the database on PostgreSQL, into the data\n" +
			"file of a stopped server, or through a 0600 request file in the data directory that a\n" +
			"running server answers within a second (run it as hookbox's user or root).\n" +
			"What each role may (a token never opens a page):\n" + app.RolesHelp("  "), run: runUser},
	{name: "token", synopsis: "create -name N -role R [-expires 90d] | list | revoke NAME  [-config FILE] [-data-dir DIR]", summary: "manage the API tokens of scripts",
		help: "create prints the token (hbx_…) once: only its SHA-256 is stored. A token works on /api/v1\n" +
			"and /metrics as Authorization: Bearer, never on the pages. Works with the server running or\n" +
			"stopped, as user does.\n" +
			"What each role may:\n" + app.RolesHelp("  "), run: runToken},
	{name: "passwd", synopsis: "[-config FILE] [-data-dir DIR] [-generate]", summary: "set a new status page password (server running or stopped)",
		help: "Reads a new password for the status page and the admin API, twice without echo from a\n" +
			"terminal or one line from stdin (-generate: makes one and prints it), and stores its\n" +
			"bcrypt hash: in the data file of a stopped server; through a 0600 request file in the\n" +
			"data directory, which a running server takes within a second (run it as hookbox's user\n" +
			"or root); in the database on PostgreSQL. With [status] password or password_env in\n" +
			"the config it changes nothing: change the config.", run: runPasswd},
	{name: "sink", synopsis: "[-listen ADDR] [-secret whsec_…] [-config FILE]", summary: "receive deliveries and print each (to try hookbox out)",
		help: "A small endpoint that prints one line per delivery hookbox makes to it (webhook-id,\n" +
			"source, event id, topic, attempt, size) and checks its webhook-signature with the\n" +
			"destination's secret: -secret, else $HOOKBOX_SINK_SECRET, else the secret of the\n" +
			"destination in -config whose url is on -listen. It answers 200, or 401 to a bad\n" +
			"signature (hookbox then retries, as with a real endpoint).", run: runSink},
	{name: "listen", synopsis: "URL -forward http://localhost:3000/PATH [-source S] [-topic GLOB] [-secret whsec_…] [-max-body B] [-timeout D]",
		summary: "forward the events a remote hookbox accepts to a local URL, live (a viewer token is enough)",
		help:    listenHelp, run: runListen},
	{name: "version", synopsis: "", summary: "print the version, commit and build time",
		help: "Prints the version, the VCS commit and the build time of this binary.", run: runVersion},
}

// replayHelp is hookbox replay -h.
const replayHelp = "Sends deliveries again through the running server's admin API: every dead one\n" +
	"(-all), the ones with the given ids, those of one event (-event SOURCE/ID, the\n" +
	"source and the id the platform gave it), or those a query\n" +
	"selects: events received -since and -until (a time, local unless it says its zone:\n" +
	"2026-11-29 14:00 or 2026-11-29T13:00:00Z; or a duration ago: 2h, 3d),\n" +
	"-source, -topic (a glob), -destination, -status (dead, delivered or any, the\n" +
	"default; pending ones are on their way and never replayed), -q (events whose body\n" +
	"contains TEXT, at least 3 characters, ASCII letters in either case). A query needs\n" +
	"at least one of -since, -until, -source, -destination, -status, -q, and replays at\n" +
	"most 100,000, in the order they were accepted, paced by each destination's\n" +
	"concurrency.\n" +
	"A delivered delivery was taken once already: without -force it is skipped, with it\n" +
	"sent again; a dead one is sent; a pending one is left alone (on its way already).\n" +
	"The server decides and says the split: \"6 match: 1 dead sent, 5 delivered skipped\n" +
	"(-force sends them too)\". -dry-run prints the same split (\"will be sent\") and\n" +
	"changes nothing. Each delivery is named as #ID DESTINATION ← SOURCE/EVENT-ID TOPIC;\n" +
	"-json prints the server's answers. With ids or -event, a delivery not found or\n" +
	"skipped exits 1.\n" +
	"Examples:\n" +
	"  hookbox replay -since 2h -destination erp -dry-run\n" +
	"  hookbox replay -since '2026-11-29 14:00' -until '2026-11-29 18:00' -topic 'orders/*' -force\n" +
	"  hookbox replay -q '#1004' -destination pos -dry-run\n" +
	"  hookbox replay -event shop/wh-1004 -force"

// needs is the sentence that ends the help of a command that calls the
// admin API: the weakest role that may do all of its actions, from app's
// table of roles.
func needs(actions ...app.Action) string {
	role := app.RoleViewer
	for _, a := range actions {
		role = max(role, a.Role())
	}
	if role == app.RoleAdmin {
		return "\nIt needs the admin role (hookbox user -h says what each role may)." + reaches
	}
	return "\nIt needs the " + role.String() + " role or above (hookbox user -h says what each role may)." + reaches
}

// reaches ends the help of a command that calls the admin API: how it
// finds the server and who it is there (admin.go).
const reaches = "\nOn the box that runs hookbox it goes through the local socket as the Unix user who\n" +
	"runs it, an admin, with no password: as root or a member of group hookbox. Elsewhere,\n" +
	"-url https://hooks.example.com with HOOKBOX_TOKEN (hookbox token create). HOOKBOX_TOKEN,\n" +
	"or HOOKBOX_USER and HOOKBOX_PASSWORD, when set, go to server.listen instead; so does\n" +
	"[status] password when there is no socket."

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

// configOptions are -config and the flags that override two of its keys
// (-listen over HOOKBOX_LISTEN over server.listen, -data-dir over
// HOOKBOX_DATA_DIR over server.data_dir).
type configOptions struct {
	path    *string
	listen  *string
	dataDir *string
	// url is -url of the commands that call the admin API (adminFlags):
	// a server elsewhere; nil or "" for this box's.
	url *string
	// lookupEnv reads the environment (os.LookupEnv when nil).
	lookupEnv func(string) (string, bool)
	// reach loads only what reaching the running server needs when the
	// rest of the file has mistakes (config.LoadReach): hookbox reload
	// sends such a file to the server, which names them.
	reach bool
	// keepMemoryLimit: serve keeps the runtime's memory limit as
	// tuneRuntime set it instead of fitting it to the store (fitMemory):
	// bench's in-process hookbox shares its process with the load.
	keepMemoryLimit bool
}

// configFlags adds -config, -listen and -data-dir to fs.
func configFlags(fs *flag.FlagSet) *configOptions {
	return &configOptions{
		path:    configFlag(fs),
		listen:  fs.String("listen", "", "host:port to serve on or reach the server at, over server.listen and $"+config.EnvListen),
		dataDir: fs.String("data-dir", "", "the data directory, over server.data_dir and $"+config.EnvDataDir),
	}
}

// overrides returns what the flags override.
func (o *configOptions) overrides() config.Overrides {
	return config.Overrides{Listen: *o.listen, DataDir: *o.dataDir}
}

// load reads and validates the config with the overrides.
func (o *configOptions) load() (*app.Config, error) {
	if o.reach {
		return config.LoadReach(*o.path, o.overrides().Lookup(o.lookupEnv))
	}
	return config.Load(*o.path, o.overrides().Lookup(o.lookupEnv))
}
