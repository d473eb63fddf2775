package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Certificate trouble is never silent: the watcher (Watch) looks at the
// served certificate every CheckEvery, and every failure to obtain, renew
// or load one is logged and, through Alert, sent to alerts.url.

// DefaultCheckEvery is how often Watch looks at the certificate.
const DefaultCheckEvery = time.Hour

// ExpiryWarning is how close to its expiry a certificate is reported, in
// the log and to alerts.url, every check until it is replaced. ACME
// renews 30 days before (a third of the lifetime for short ones), so a
// certificate this close to expiry means renewals have failed for weeks.
const ExpiryWarning = 14 * 24 * time.Hour

// Topics of the alerts about certificates (alert.Alerter.Notify sends each
// at most once an hour).
const (
	AlertCertObtain  = "certificate-obtain"
	AlertCertRenewal = "certificate-renewal"
	AlertCertExpiry  = "certificate-expiry"
	AlertCertFiles   = "certificate-files"
)

// troubleLogEvery spaces the log lines of one kind of trouble that can
// repeat at the rate of handshakes (a TLS handshake without a
// certificate, an ACME request that fails).
const troubleLogEvery = time.Minute

// Watch checks the certificate now, every CheckEvery, and at the moments
// that matter to the certificate in service (when its renewal is overdue,
// when it enters ExpiryWarning, when it expires), until ctx is done.
// In ACME mode the first check gets the certificate (logging "certificate
// ready", or why not), and later ones get it again while there is none.
// Each check reports, in the log and through Alert: a certificate that
// cannot be obtained or loaded; an ACME certificate past its renewal time
// (autocert renews in the background and tells no one when that fails);
// one within ExpiryWarning of its expiry. It keeps the served
// certificate's expiry for the hookbox_certificate_expiry_seconds metric.
func (t *TLS) Watch(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		next := time.Now().Add(t.checkEvery)
		if at := t.check(ctx); !at.IsZero() && at.Before(next) {
			next = at
		}
		timer.Reset(max(time.Until(next), time.Second))
	}
}

// check is one look of Watch at the certificate; it returns when the next
// event of the certificate in service falls (zero: none).
func (t *TLS) check(ctx context.Context) (next time.Time) {
	cert, err := t.Obtain(ctx)
	if ctx.Err() != nil {
		return time.Time{}
	}
	if err != nil {
		if t.manager != nil {
			t.trouble(AlertCertObtain, "no certificate yet", fmt.Sprintf("hookbox: no certificate for %s: %v. "+
				"Check that the domain points to this machine and that ports 80 and 443 are open; hookbox tries again.", t.domain, err),
				slog.Any("error", err), "hint", "check that the domain points to this machine and that ports 80 and 443 are open; the next HTTPS connection tries again")
		}
		return time.Time{} // files mode: certFiles reported it
	}
	if t.files != nil {
		if err := t.files.failure(); err != nil { // still: say so at every check
			t.files.failed(err)
		}
	}
	leaf := cert.Leaf
	if leaf == nil {
		return time.Time{}
	}
	now := time.Now()
	soon := func(at time.Time) { // the earliest moment still ahead
		if at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	soon(leaf.NotAfter.Add(-ExpiryWarning))
	soon(leaf.NotAfter)
	t.served(leaf.NotAfter)
	if t.manager != nil {
		serial := leaf.SerialNumber.String()
		switch last := t.lastSerial.Swap(&serial); {
		case last == nil:
			t.Logger.Info("certificate ready", "domain", t.domain, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
		case *last != serial:
			t.Logger.Info("certificate renewed", "domain", t.domain, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	if t.manager != nil {
		// autocert renews at NotAfter - min(lifetime/3, 30 days), up to
		// min(that/10, 1h) later, and retries a failure every 30-60 min:
		// past twice that margin, an attempt has failed.
		threshold := min(leaf.NotAfter.Sub(leaf.NotBefore)/3, 30*24*time.Hour)
		due := leaf.NotAfter.Add(-threshold).Add(2 * min(threshold/10, time.Hour))
		soon(due)
		if now.After(due) {
			last := "none recorded"
			if e := t.acmeErr.Load(); e != nil {
				last = *e
			}
			t.trouble(AlertCertRenewal, "certificate not renewed", fmt.Sprintf("hookbox: the certificate for %s was due for renewal on %s and has not been renewed; it expires %s. Last error from the ACME CA: %s.",
				t.domain, leaf.NotAfter.Add(-threshold).UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), last),
				"domain", t.domain, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "last_ca_error", last)
		}
	}
	if left := leaf.NotAfter.Sub(now); left < ExpiryWarning {
		name := t.domain
		if name == "" && len(leaf.DNSNames) > 0 {
			name = leaf.DNSNames[0]
		}
		what := fmt.Sprintf("expires in %s", left.Round(time.Minute))
		if left < time.Hour {
			what = fmt.Sprintf("expires in %s", left.Round(time.Second))
		}
		if left <= 0 {
			what = "has expired: clients refuse it"
		}
		t.trouble(AlertCertExpiry, "certificate expires soon", fmt.Sprintf("hookbox: the certificate for %s %s (not after %s).",
			name, what, leaf.NotAfter.UTC().Format(time.RFC3339)),
			"name", name, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "left", left.Round(time.Second).String())
	}
	return next
}

// trouble logs msg with attrs at Error and tells Alert text under topic.
func (t *TLS) trouble(topic, msg, text string, attrs ...any) {
	t.Logger.Error(msg, attrs...)
	if t.Alert != nil {
		t.Alert(topic, text)
	}
}

// served notes the expiry of the certificate in service, for the metric.
func (t *TLS) served(notAfter time.Time) { t.notAfter.Store(notAfter.UnixNano()) }

// NotAfter is the expiry of the certificate in service, zero while there
// is none: hookbox_certificate_expiry_seconds (metrics.CertificateExpiry).
func (t *TLS) NotAfter() time.Time {
	if na := t.notAfter.Load(); na != 0 {
		return time.Unix(0, na)
	}
	return time.Time{}
}

// Bounds of the ACME client: a CA (or anything between) cannot make
// hookbox hold more than this of one answer, or wait longer for it.
const (
	maxACMEHeader = 64 << 10
	// maxACMEAnswer is above the longest certificate chain acme accepts
	// (5 × 1 MiB); it bounds every other answer (JSON, problems) too.
	maxACMEAnswer  = 8 << 20
	acmeReqTimeout = time.Minute
)

// errACMEAnswerTooLarge ends the read of an ACME answer past maxACMEAnswer.
var errACMEAnswerTooLarge = fmt.Errorf("ACME answer larger than %d MiB", maxACMEAnswer>>20)

// acmeClient is the HTTP client autocert talks to the CA with: each
// request cut at acmeReqTimeout, its answer's header capped and its body
// cut at maxACMEAnswer (x/crypto/acme decodes JSON and error bodies
// without a limit), and failures noted for the watcher's reports. base
// (tests) supplies the transport, e.g. one that trusts a test CA.
func (t *TLS) acmeClient(base *http.Client) *http.Client {
	var rt http.RoundTripper = http.DefaultTransport
	if base != nil && base.Transport != nil {
		rt = base.Transport
	}
	if tr, ok := rt.(*http.Transport); ok {
		tr = tr.Clone()
		tr.MaxResponseHeaderBytes = maxACMEHeader
		rt = tr
	}
	return &http.Client{Timeout: acmeReqTimeout, Transport: &acmeTransport{rt: rt, t: t}}
}

// acmeTransport bounds answers from the CA and notes failed requests.
type acmeTransport struct {
	rt http.RoundTripper
	t  *TLS
}

func (a *acmeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.rt.RoundTrip(req)
	if err != nil {
		a.t.acmeFailed(fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, err))
		return nil, err
	}
	body := &cappedBody{rc: resp.Body, left: maxACMEAnswer}
	resp.Body = body
	if resp.StatusCode >= 400 {
		// Keep the problem document's type and detail for the reports; the
		// acme package reads the same bytes after us.
		head, _ := io.ReadAll(io.LimitReader(body, 4<<10))
		var problem struct{ Type, Detail string }
		json.Unmarshal(head, &problem)
		if !strings.HasSuffix(problem.Type, ":badNonce") { // routine: acme retries it
			a.t.acmeFailed(fmt.Sprintf("%s %s: the CA answered %d %s %s", req.Method, req.URL.Path, resp.StatusCode, problem.Type, problem.Detail))
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), body), body}
	}
	return resp, nil
}

// acmeFailed notes the latest failed exchange with the CA and logs it (at
// most once per troubleLogEvery).
func (t *TLS) acmeFailed(what string) {
	t.acmeErr.Store(&what)
	if ok, _ := t.acmeLog.Allow(time.Now(), troubleLogEvery); ok {
		t.Logger.Warn("ACME request failed", "error", what)
	}
}

// cappedBody fails a read past left bytes.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errACMEAnswerTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// handshakeFailed reports a TLS handshake that got no certificate for the
// configured name, at most once per troubleLogEvery in the log; the alert
// is rate-limited by Alert.
func (t *TLS) handshakeFailed(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	if ok, _ := t.handshakeLog.Allow(time.Now(), troubleLogEvery); ok {
		t.Logger.Error("TLS handshake without a certificate", "domain", t.domain, slog.Any("error", err))
	}
	if t.Alert != nil {
		t.Alert(AlertCertObtain, fmt.Sprintf("hookbox: HTTPS connections to %s fail: no certificate (%v).", t.domain, err))
	}
}
