package alert_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// Email only (no alert URL): the alerts that were sent only to the URL go
// out too, each with its kind and a subject, and a text that names the
// page (public_url); the URL gets the same kinds in its JSON.
func TestAlerter_KindsAndSubjects(t *testing.T) {
	for _, withURL := range []bool{false, true} {
		name := "EmailOnly"
		if withURL {
			name = "URLAndEmail"
		}
		t.Run(name, func(t *testing.T) {
			sink := newJSONSink(t)
			url := ""
			if withURL {
				url = sink.url
			}
			emails := make(chan app.AlertMessage, 10)
			now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
			a, _ := destAlerter(t, url, func(m app.AlertMessage) { emails <- m }, &now)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { a.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })

			a.Backup(ctx, errors.New("no space left on device"))
			a.Backup(ctx, errors.New("no space left on device")) // the same streak: nothing
			a.Backup(ctx, nil)
			a.Notify("certificate-expiry", "hookbox: the certificate of hooks.shop.example expires in 3 days.")
			want := []string{app.AlertBackupFailed, app.AlertBackupRecovered, app.AlertCertificate}
			var ms []app.AlertMessage
			for len(ms) < len(want) {
				select {
				case m := <-emails:
					ms = append(ms, m)
				case <-time.After(5 * time.Second):
					t.Fatalf("emails = %+v; want %v", ms, want)
				}
			}
			for i, m := range ms {
				if m.Kind != want[i] || m.Subject == "" || strings.Contains(m.Subject, "\n") ||
					!strings.Contains(m.Text, "https://hooks.shop.example/") {
					t.Errorf("email %d = %+v; want kind %s, a one-line subject, and the page's URL in the text", i, m, want[i])
				}
			}
			select {
			case m := <-emails:
				t.Errorf("an extra email: %+v (a backup streak alerts once)", m)
			default:
			}
			if !strings.Contains(ms[0].Text, "no space left on device") {
				t.Errorf("backup failure text = %q; want the reason", ms[0].Text)
			}
			if withURL {
				// Email is handed each alert before the URL's post.
				sink.wait(3, 5*time.Second, nil)
				bodies := sink.got()
				if len(bodies) != 3 {
					t.Fatalf("URL got %v; want the same 3 alerts", bodies)
				}
				for i, b := range bodies {
					if b["kind"] != want[i] || b["text"] != ms[i].Text || b["destination"] != nil || b["subject"] != nil {
						t.Errorf("URL body %d = %v; want kind %s, the same text, no destination or subject", i, b, want[i])
					}
				}
			} else if n := len(sink.got()); n != 0 {
				t.Errorf("the unconfigured URL got %d posts", n)
			}
		})
	}
}
