package mail

import (
	"bytes"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

func composeRead(t *testing.T, msg app.AlertMessage, page string) (*mail.Message, string) {
	t.Helper()
	from := &mail.Address{Name: "hookbox", Address: "alerts@shop.example"}
	to := []*mail.Address{{Address: "ops@shop.example"}}
	raw := compose(msg, from, to, page, time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	for i, line := range strings.Split(string(raw), "\r\n") {
		if strings.ContainsAny(line, "\r\n") || len(line) > maxLine {
			t.Errorf("line %d is not a line SMTP carries: %q", i, line)
		}
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	var body io.Reader = m.Body
	if m.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
		body = quotedprintable.NewReader(m.Body)
	}
	b, _ := io.ReadAll(body)
	return m, string(b)
}

func TestCompose(t *testing.T) {
	t.Run("HeaderInjection", func(t *testing.T) {
		m, body := composeRead(t, app.AlertMessage{Kind: "dead_letters\r\nBcc: x@evil.example", Subject: "3 dead\r\nBcc: evil@evil.example\nX-Evil: 1", Text: "three"}, "")
		for _, k := range []string{"Bcc", "X-Evil"} {
			if v := m.Header.Get(k); v != "" {
				t.Errorf("header %s injected: %q", k, v)
			}
		}
		if got := m.Header.Get("Subject"); got != "3 dead Bcc: evil@evil.example X-Evil: 1" {
			t.Errorf("Subject %q", got)
		}
		if strings.Contains(body, "Status page") {
			t.Errorf("a status page line without public_url:\n%s", body)
		}
	})
	t.Run("UTF8", func(t *testing.T) {
		msg := app.AlertMessage{Kind: app.AlertDestinationFailing, Destination: "kasse", Subject: "Kasse antwortet nicht – seit 10 Min.",
			Text: "hookbox: Zielsystem „kasse“ antwortet nicht.\n" + strings.Repeat("x", 2000)}
		m, body := composeRead(t, msg, "https://hooks.example.com/")
		if cte := m.Header.Get("Content-Transfer-Encoding"); cte != "quoted-printable" {
			t.Errorf("Content-Transfer-Encoding %q", cte)
		}
		subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
		if err != nil || subject != msg.Subject {
			t.Errorf("Subject %q (%v)", subject, err)
		}
		want := strings.ReplaceAll(msg.Text, "\n", "\r\n") + "\r\n\r\nStatus page: https://hooks.example.com/\r\nAlert kind: destination_failing\r\nDestination: kasse\r\n"
		if !strings.HasPrefix(body, want) {
			t.Errorf("body:\n%s\nwant it to start with:\n%s", body, want)
		}
	})
	t.Run("NoSubject", func(t *testing.T) {
		m, _ := composeRead(t, app.AlertMessage{Kind: app.AlertStorageFailing, Text: "storage"}, "")
		if got := m.Header.Get("Subject"); got != "hookbox alert: storage failing" {
			t.Errorf("Subject %q", got)
		}
		if got := m.Header.Get("Content-Transfer-Encoding"); got != "7bit" {
			t.Errorf("Content-Transfer-Encoding %q", got)
		}
	})
}
