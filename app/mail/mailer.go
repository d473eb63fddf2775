package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"strings"
	"time"

	"hookbox/app"
)

// Defaults of a Mailer.
const (
	// DefaultQueue bounds the messages waiting to be sent.
	DefaultQueue = 64
	// DefaultTimeout bounds one send, from the dial to the server's answer
	// to the message.
	DefaultTimeout = 30 * time.Second
	// DefaultTries bounds the sends of one message: with the default
	// backoff, 12 tries span about an hour.
	DefaultTries = 12
	// FirstBackoff and MaxBackoff bound the wait after a failed send: it
	// starts at FirstBackoff and doubles up to MaxBackoff.
	FirstBackoff = 10 * time.Second
	MaxBackoff   = 10 * time.Minute
)

// Mailer sends alerts by email, one at a time, from its own goroutine
// (Run): Queue never blocks.
type Mailer struct {
	Logger *slog.Logger
	// RootCAs verifies the server's certificate (nil: the system's roots).
	RootCAs *x509.CertPool
	// Timeout bounds one send.
	Timeout time.Duration
	// Tries bounds the sends of one message; then it is dropped, logged.
	Tries int
	// Backoff is the wait after the try-th failed send of a message (from
	// 1); tests shorten it.
	Backoff func(try int) time.Duration
	// Now is the clock of the Date header.
	Now func() time.Time
	// Hostname is what the client calls itself in EHLO.
	Hostname string
	// Attempted, when set, hears the outcome of each send (nil: sent); a
	// test waits on it.
	Attempted func(msg app.AlertMessage, err error)

	server Server
	from   *mail.Address
	to     []*mail.Address
	page   string
	queue  chan app.AlertMessage
}

// New builds the mailer of cfg's alerts (EmailTo, EmailFrom, SMTPURL);
// page, when set, is the status page's URL, given in every message.
func New(cfg app.AlertsConfig, page string) (*Mailer, error) {
	srv, err := ParseURL(cfg.SMTPURL)
	if err != nil {
		return nil, fmt.Errorf("SMTP URL %w", err)
	}
	from, err := mail.ParseAddress(cfg.EmailFrom)
	if err != nil {
		return nil, fmt.Errorf("email_from %q: %w", cfg.EmailFrom, err)
	}
	m := &Mailer{
		Logger:   slog.With("component", "email"),
		Timeout:  DefaultTimeout,
		Tries:    DefaultTries,
		Backoff:  Backoff,
		Now:      time.Now,
		Hostname: hostname(),
		server:   srv,
		from:     from,
		page:     page,
		queue:    make(chan app.AlertMessage, DefaultQueue),
	}
	if len(cfg.EmailTo) == 0 {
		return nil, errors.New("email_to names no address")
	}
	for _, s := range cfg.EmailTo {
		a, err := mail.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("email_to %q: %w", s, err)
		}
		m.to = append(m.to, a)
	}
	return m, nil
}

// SetQueue sets how many messages may wait (DefaultQueue unless set), and
// empties the queue: call it before Queue and Run.
func (m *Mailer) SetQueue(n int) { m.queue = make(chan app.AlertMessage, n) }

// Backoff is the default wait after the try-th failed send: 10 s, doubling
// up to 10 minutes.
func Backoff(try int) time.Duration {
	return app.Backoff{First: FirstBackoff, Max: MaxBackoff}.Wait(try)
}

// Queue hands msg to Run. It never blocks: when the queue is full, msg is
// dropped and logged.
func (m *Mailer) Queue(msg app.AlertMessage) {
	select {
	case m.queue <- msg:
	default:
		m.Logger.Warn("email dropped: queue full", "kind", msg.Kind, "destination", msg.Destination, "queue", cap(m.queue))
	}
}

// Run sends the queued messages one at a time until ctx is done. A send
// that fails is tried again after Backoff, up to Tries times; an answer
// of the server that refuses the message for good (5xx) drops it at once.
//
// When ctx is done it makes one try of each message still queued, all
// within DrainTimeout, and returns: an alert raised just before a stop
// (a destination that answers again, then systemctl restart) still goes
// out.
func (m *Mailer) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			m.drain()
			return
		case msg := <-m.queue:
			if !m.deliver(ctx, msg) { // the stop came first, or cut its send
				m.drain(msg)
				return
			}
		}
	}
}

// DrainTimeout bounds the sends Run makes at shutdown: well inside the
// shutdown's own grace.
const DrainTimeout = 3 * time.Second

// drain makes one try of each of first and the queued messages within
// DrainTimeout.
func (m *Mailer) drain(first ...app.AlertMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
	defer cancel()
	for {
		var msg app.AlertMessage
		if len(first) > 0 {
			msg, first = first[0], first[1:]
		} else {
			select {
			case msg = <-m.queue:
			default:
				return
			}
		}
		if err := m.Send(ctx, msg); err != nil {
			m.Logger.Error("email dropped at shutdown", "kind", msg.Kind, "destination", msg.Destination, "server", m.server.String(), slog.Any("error", err))
			continue
		}
		m.Logger.Info("email sent", "kind", msg.Kind, "destination", msg.Destination, "to", len(m.to), "tries", 1)
	}
}

// deliver sends msg, trying again while the failure may pass. It reports
// false when ctx ended before msg was sent or dropped (Run then drains).
func (m *Mailer) deliver(ctx context.Context, msg app.AlertMessage) bool {
	for try := 1; ; try++ {
		if ctx.Err() != nil {
			return false
		}
		err := m.Send(ctx, msg)
		again := m.logOutcome(ctx, msg, try, err)
		if m.Attempted != nil {
			m.Attempted(msg, err) // after the log line: a test that waits on it reads the line
		}
		if err != nil && ctx.Err() != nil {
			return false
		}
		if !again {
			return true
		}
		t := time.NewTimer(m.Backoff(try))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// logOutcome logs the try-th send of msg, and reports whether to try again.
func (m *Mailer) logOutcome(ctx context.Context, msg app.AlertMessage, try int, err error) bool {
	switch {
	case err == nil:
		m.Logger.Info("email sent", "kind", msg.Kind, "destination", msg.Destination, "to", len(m.to), "tries", try)
		return false
	case ctx.Err() != nil:
		return false // shutting down: Run makes one more try (drain)
	case permanent(err) || try >= m.Tries:
		m.Logger.Error("email dropped", "kind", msg.Kind, "destination", msg.Destination, "tries", try, "server", m.server.String(), slog.Any("error", err))
		return false
	}
	m.Logger.Warn("email not sent; trying again", "kind", msg.Kind, "destination", msg.Destination, "try", try, "in", m.Backoff(try),
		"server", m.server.String(), slog.Any("error", err))
	return true
}

// permanent reports whether the server refused for good (a 5xx answer):
// sending the same message again would be refused again.
func permanent(err error) bool {
	var te *textproto.Error
	return errors.As(err, &te) && te.Code >= 500
}

// Send sends msg now, within Timeout. Its error names the server without
// the password.
func (m *Mailer) Send(ctx context.Context, msg app.AlertMessage) error {
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	if err := m.send(ctx, msg); err != nil {
		// The connection's deadline (the same instant) may fire before
		// the context's timer does.
		var ne net.Error
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			err = fmt.Errorf("%w (cut after %s)", err, m.Timeout)
		}
		return fmt.Errorf("send to %s: %w", m.server, err)
	}
	return nil
}

func (m *Mailer) send(ctx context.Context, msg app.AlertMessage) error {
	tlsConfig := &tls.Config{ServerName: m.server.Host, RootCAs: m.RootCAs, MinVersion: tls.VersionTLS12}
	d := &net.Dialer{}
	var conn net.Conn
	var err error
	if m.server.Scheme == SchemeTLS {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, "tcp", m.server.Addr())
	} else {
		conn, err = d.DialContext(ctx, "tcp", m.server.Addr())
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // shutdown cuts a send
	defer stop()

	c, err := smtp.NewClient(conn, m.server.Host)
	if err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	defer c.Close()
	if err := c.Hello(m.Hostname); err != nil {
		return fmt.Errorf("EHLO: %w", err)
	}
	if m.server.Scheme == SchemeSTARTTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return errors.New("the server does not offer STARTTLS, and smtp:// sends nothing in the clear: use smtps:// if it takes TLS on connect, or smtp+insecure:// for a relay on this machine")
		}
		if err := c.StartTLS(tlsConfig); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if m.server.User != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("the URL has a user, but the server offers no AUTH")
		}
		if err := c.Auth(smtp.PlainAuth("", m.server.User, m.server.Password, m.server.Host)); err != nil {
			return fmt.Errorf("AUTH as %s: %w", m.server.User, err)
		}
	}
	if err := c.Mail(m.from.Address); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, a := range m.to {
		if err := c.Rcpt(a.Address); err != nil {
			return fmt.Errorf("RCPT TO %s: %w", a.Address, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(compose(msg, m.from, m.to, m.page, m.Now())); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	// From the data's end on, the server may have taken the message before
	// its answer comes: a stop no longer cuts this send (Timeout still
	// bounds it), or the drain would send the message a second time.
	if !stop() {
		return fmt.Errorf("DATA: %w", context.Cause(ctx))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("message refused: %w", err)
	}
	c.Quit() // the message is taken; a QUIT that fails changes nothing
	return nil
}

// Server is the server the mailer sends through (its String has no
// password).
func (m *Mailer) Server() Server { return m.server }

// To is the addresses every message goes to.
func (m *Mailer) To() []string {
	out := make([]string, len(m.to))
	for i, a := range m.to {
		out[i] = a.Address
	}
	return out
}

// hostname is this machine's name for EHLO, when it looks like a domain
// name; else a name servers take.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" || strings.ContainsAny(h, " \t\r\n") {
		return "localhost"
	}
	return h
}
