package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"hookbox/app"
	"hookbox/app/listen"
)

// streamRole is the weakest role that may stream events (app's table of
// roles), which is all listen needs.
var streamRole = app.ActStream.Role().String()

// listenHelp is hookbox listen -h.
var listenHelp = "Connects to the hookbox at URL (its base, e.g. https://hooks.example.com) and POSTs every\n" +
	"event it accepts from now on (of -source, with a topic that matches -topic) to the -forward\n" +
	"URL, one at a time in order, with the body and headers as received. The remote never sends a\n" +
	"provider's signature (whoever reads the stream could post the event back as genuine): listen\n" +
	"signs each request itself, in the source's own scheme (Shopify's HMAC, Stripe's signature with\n" +
	"a fresh timestamp, GitHub's, Standard Webhooks', an hmac source's header, a token source's\n" +
	"Authorization...), with the listen secret it prints at start: give your app that secret in\n" +
	"place of the provider's and its usual check works. The secret is derived from the token (or\n" +
	"user and password), so it is the same from run to run; -secret (or $HOOKBOX_LISTEN_SECRET)\n" +
	"sets one (whsec_ and base64 of 24 to 64 bytes). It prints a line\n" +
	"per event: time, source, topic, event id, the local answer and how long it took. A failed\n" +
	"forward is printed, not tried again. It changes nothing on the remote: its deliveries go on.\n" +
	"A broken connection is made again (1 s, doubling to 10 s) and resumes after the last event\n" +
	"received: the remote sends what it accepted meanwhile, up to 10 minutes or 10,000 events.\n" +
	"Identity: $HOOKBOX_TOKEN (a token of hookbox token create; " + streamRole + " is enough), else\n" +
	"$HOOKBOX_USER (default admin) and $HOOKBOX_PASSWORD. Ctrl-C ends it.\n" +
	"A remote that listens on 127.0.0.1 only is reached through SSH:\n" +
	"  ssh -N -L 8080:127.0.0.1:8080 vps &\n" +
	"  HOOKBOX_TOKEN=hbx_… hookbox listen http://127.0.0.1:8080 -forward http://localhost:3000/webhooks"

func runListen(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	forward := fs.String("forward", "", "the local URL each event is POSTed to (required)")
	source := fs.String("source", "", "only the events of this source")
	topic := fs.String("topic", "", "only the events whose topic matches this glob (orders/*)")
	maxBody := fs.Int("max-body", listen.DefaultMaxBody, "the largest event body read from the stream (the remote's server.max_body_bytes)")
	timeout := fs.Duration("timeout", listen.DefaultForwardTimeout, "how long one forward may take")
	secret := fs.String("secret", "", "the listen secret forwards are signed with (whsec_…; default $HOOKBOX_LISTEN_SECRET, else derived from the credential)")
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(operands) != 1 || *forward == "" {
		fmt.Fprintf(stderr, "hookbox listen: give the remote hookbox's URL and -forward URL\nUsage: hookbox listen %s\n", c.synopsis)
		return 2
	}
	l := &listen.Listener{Remote: operands[0], Forward: *forward, Source: *source, Topic: *topic,
		MaxBody: *maxBody, ForwardTimeout: *timeout, Out: stdout}
	if tok := os.Getenv("HOOKBOX_TOKEN"); tok != "" {
		l.Token, l.CredentialFrom = tok, "the token in HOOKBOX_TOKEN"
	} else if pw := os.Getenv("HOOKBOX_PASSWORD"); pw != "" {
		l.User = app.DefaultStatusUser
		if u := os.Getenv("HOOKBOX_USER"); u != "" {
			l.User = u
		}
		l.Password, l.CredentialFrom = pw, fmt.Sprintf("user %q with the password in HOOKBOX_PASSWORD", l.User)
	} else {
		fmt.Fprintf(stderr, "hookbox listen: no credential: set HOOKBOX_TOKEN (a %[1]s token is enough: hookbox token create -name laptop -role %[1]s, on the remote), or HOOKBOX_USER and HOOKBOX_PASSWORD\n", streamRole)
		return 2
	}
	l.Secret = *secret
	if l.Secret == "" {
		l.Secret = os.Getenv("HOOKBOX_LISTEN_SECRET")
	}
	if l.Secret != "" {
		if err := listen.CheckSecret(l.Secret); err != nil {
			fmt.Fprintf(stderr, "hookbox listen: -secret: %v\n", err)
			return 2
		}
	} else if l.Token != "" {
		l.Secret = listen.TokenSecret(l.Token)
	} else {
		l.Secret = listen.PasswordSecret(l.User, l.Password)
	}
	// As stripe listen prints its whsec_: the user's own terminal, the
	// one place it is shown (never a log).
	fmt.Fprintf(stdout, "Your listen secret is %s: verify forwarded requests with it (each is signed in its source's scheme)\n", l.Secret)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := l.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "hookbox listen: %v\n", err)
		return 1
	}
	return 0
}
