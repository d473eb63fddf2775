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

// listenHelp is hookbox listen -h.
const listenHelp = "Connects to the hookbox at URL (its base, e.g. https://hooks.example.com) and POSTs every\n" +
	"event it accepts from now on (of -source, with a topic that matches -topic) to the -forward\n" +
	"URL, one at a time in order, with the body and headers as received: an app that checks\n" +
	"Shopify's HMAC or Stripe's signature works unchanged with the same secret. It prints a line\n" +
	"per event: time, source, topic, event id, the local answer and how long it took. A failed\n" +
	"forward is printed, not tried again. It changes nothing on the remote: its deliveries go on.\n" +
	"A broken connection is made again (1 s, doubling to 10 s) and resumes after the last event\n" +
	"received: the remote sends what it accepted meanwhile, up to 10 minutes or 10,000 events.\n" +
	"Identity: $HOOKBOX_TOKEN (a token of hookbox token create; viewer is enough), else\n" +
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
		fmt.Fprintln(stderr, "hookbox listen: no credential: set HOOKBOX_TOKEN (a viewer token is enough: hookbox token create -name laptop -role viewer, on the remote), or HOOKBOX_USER and HOOKBOX_PASSWORD")
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := l.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "hookbox listen: %v\n", err)
		return 1
	}
	return 0
}
