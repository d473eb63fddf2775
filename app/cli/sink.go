package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"hookbox/app/config"
	"hookbox/app/sink"
)

// sinkSecretEnv holds the sink's secret when -secret is not given (a
// secret on the command line shows in ps).
const sinkSecretEnv = "HOOKBOX_SINK_SECRET"

func runSink(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	listen := fs.String("listen", "127.0.0.1:9000", "host:port to receive deliveries on")
	secret := fs.String("secret", "", "the destination's whsec_… secret, to check webhook-signature (default: $"+sinkSecretEnv+
		", else the secret of the destination in -config whose url is on -listen)")
	maxBody := fs.Int64("max-body", sink.DefaultMaxBody, "the largest body read; a longer one is answered 413")
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	sec, from := *secret, ""
	if sec == "" {
		sec, from = os.Getenv(sinkSecretEnv), "$"+sinkSecretEnv
	}
	if sec == "" {
		sec, from = secretFromConfig(*path, *listen)
	}
	s, err := sink.New(sec, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sink: %s: %v\n", from, err)
		return 2
	}
	if *maxBody < 1 {
		fmt.Fprintln(stderr, "hookbox sink: -max-body must be positive")
		return 2
	}
	s.MaxBody = *maxBody
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sink: %v\n", err)
		return 1
	}
	line := s.Describe(ln.Addr().String())
	if from != "" && sec != "" {
		line += "; the secret from " + from
	}
	fmt.Fprintln(stdout, line)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := s.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "hookbox sink: %v\n", err)
		return 1
	}
	return 0
}

// secretFromConfig returns the secret of the first destination in the
// config at path whose URL is on listen, and says which; "" when there is
// none, or the config does not load (the sink then checks nothing, and
// says so).
func secretFromConfig(path, listen string) (secret, from string) {
	cfg, err := config.Load(path, nil)
	if err != nil {
		return "", ""
	}
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return "", ""
	}
	for _, d := range cfg.Destinations {
		u, err := url.Parse(d.URL)
		if err != nil || d.Secret == nil || u.Port() != lport {
			continue
		}
		if h := u.Hostname(); h == lhost || lhost == "" || lhost == "0.0.0.0" || lhost == "::" ||
			(isLoopback(h) && isLoopback(lhost)) {
			return string(d.Secret), fmt.Sprintf("destination %q in %s", d.Name, path)
		}
	}
	return "", ""
}

// isLoopback reports whether host names this machine's loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
