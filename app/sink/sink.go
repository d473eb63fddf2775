// Package sink is a small webhook receiver for trying hookbox out: it
// prints one line per delivery hookbox makes to it and checks the
// delivery's Standard Webhooks signature (webhook-signature), as a
// merchant's endpoint should. hookbox sink runs it.
package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"hookbox/app/provider"
)

// DefaultMaxBody is the largest body read: hookbox's default
// server.max_body_bytes, so any event it accepts by default fits.
const DefaultMaxBody = 1 << 20

// Sink answers hookbox's deliveries and reports each on Out.
type Sink struct {
	// MaxBody bounds the body read; a longer one is answered 413.
	MaxBody int64
	// Now is the clock signatures are checked against.
	Now func() time.Time

	verify provider.Verifier // nil: no secret, signatures are not checked
	mu     sync.Mutex        // one line at a time on out
	out    io.Writer
}

// New returns a sink that writes to out and, with a secret (whsec_…, the
// destination's secret in hookbox's config), checks signatures with it.
func New(secret string, out io.Writer) (*Sink, error) {
	s := &Sink{MaxBody: DefaultMaxBody, Now: time.Now, out: out}
	if secret != "" {
		v, err := provider.New("standard", provider.Settings{Secrets: [][]byte{[]byte(secret)}})
		if err != nil {
			return nil, errors.New("the secret must be a Standard Webhooks secret: whsec_ followed by base64 (the destination's secret in hookbox's config)")
		}
		s.verify = v
	}
	return s, nil
}

// ServeHTTP answers one delivery: 200 when it is genuine (or no secret is
// set), 401 when its signature is missing or wrong, so hookbox records the
// attempt as failed and retries, as it would with a real endpoint.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "hookbox sink takes POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.MaxBody+1))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	if int64(len(body)) > s.MaxBody {
		s.printf("refused %s: body over %d bytes", clean(r.Header.Get("webhook-id")), s.MaxBody)
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	sig, code := "not checked (no -secret)", http.StatusOK
	if s.verify != nil {
		if _, err := s.verify(provider.Request{Body: body, Header: r.Header}, s.Now()); err != nil {
			sig, code = "BAD ("+err.Error()+")", http.StatusUnauthorized
		} else {
			sig = "ok"
		}
	}
	s.printf("%s %s source=%s event=%s topic=%s attempt=%s bytes=%d signature %s",
		s.Now().Local().Format("15:04:05 MST"), clean(r.Header.Get("webhook-id")), clean(r.Header.Get("X-Hookbox-Source")),
		clean(r.Header.Get("X-Hookbox-Event-Id")), clean(r.Header.Get("X-Hookbox-Topic")),
		clean(r.Header.Get("X-Hookbox-Attempt")), len(body), sig)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	if code == http.StatusOK {
		io.WriteString(w, "ok\n")
	} else {
		io.WriteString(w, "bad signature\n")
	}
}

func (s *Sink) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}

// clean makes a peer's header value safe to print on one terminal line:
// at most 100 characters, control and non-printing characters as '?',
// "-" for none.
func clean(v string) string {
	if v == "" {
		return "-"
	}
	var b strings.Builder
	n := 0
	for _, r := range v {
		if n == 100 {
			b.WriteString("…")
			break
		}
		if !unicode.IsPrint(r) || r == ' ' {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Server returns an HTTP server for s with every timeout set and the
// headers bounded.
func (s *Sink) Server() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// Serve serves s on ln until ctx ends, then shuts down within five seconds.
func (s *Sink) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.Server()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Describe says what s checks, for its first line of output.
func (s *Sink) Describe(addr string) string {
	check := "signatures not checked (give -secret whsec_… to check them)"
	if s.verify != nil {
		check = "checking webhook-signature"
	}
	return "hookbox sink listening on http://" + addr + "/ (" + check + ", bodies up to " + strconv.FormatInt(s.MaxBody, 10) + " bytes)"
}
