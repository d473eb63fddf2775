package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"hookbox/app"
)

// maxSubject bounds a subject, in characters: a mail client shows one line.
const maxSubject = 200

// maxLine is the longest line SMTP carries as is (RFC 5321: 998 + CRLF);
// a longer one, or any non-ASCII byte, is sent quoted-printable.
const maxLine = 998

// compose writes msg as an email from from to to, dated now: the header
// and the body, lines ending in CRLF. page, when set, is the status
// page's URL, added to the body.
func compose(msg app.AlertMessage, from *mail.Address, to []*mail.Address, page string, now time.Time) []byte {
	var b bytes.Buffer
	header := func(name, value string) { fmt.Fprintf(&b, "%s: %s\r\n", name, value) }
	header("From", from.String())
	rcpt := make([]string, len(to))
	for i, a := range to {
		rcpt[i] = a.String()
	}
	header("To", strings.Join(rcpt, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", subject(msg)))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", messageID(from, now))
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	// An alert is a machine's message: vacation responders leave it be
	// (RFC 3834), and a filter can sort by kind.
	header("Auto-Submitted", "auto-generated")
	if k := oneLine(msg.Kind); k != "" {
		header("X-Hookbox-Kind", k)
	}
	body := text(msg, page)
	if plain(body) {
		header("Content-Transfer-Encoding", "7bit")
		b.WriteString("\r\n")
		b.WriteString(body)
		return b.Bytes()
	}
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	w := quotedprintable.NewWriter(&b)
	w.Write([]byte(body)) // a bytes.Buffer takes everything
	w.Close()
	return b.Bytes()
}

// subject is msg's subject on one line, bounded; one is made from the
// kind when the alert has none.
func subject(msg app.AlertMessage) string {
	s := oneLine(msg.Subject)
	if s == "" {
		s = "hookbox alert"
		if k := oneLine(msg.Kind); k != "" {
			s += ": " + strings.ReplaceAll(k, "_", " ")
		}
		if d := oneLine(msg.Destination); d != "" {
			s += " (" + d + ")"
		}
	}
	if utf8.RuneCountInString(s) > maxSubject {
		s = string([]rune(s)[:maxSubject-1]) + "…"
	}
	return s
}

// oneLine makes s one line: every control character (CR and LF among them,
// so no header can be injected) becomes a space, and runs of spaces one.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	return strings.Join(strings.Fields(s), " ")
}

// text is the body: the alert's text, then where to look and what kind of
// alert it is, for a reader and for a filter. Lines end in CRLF.
func text(msg app.AlertMessage, page string) string {
	var b strings.Builder
	body := strings.ToValidUTF8(msg.Text, "?")
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\r", "\n")
	b.WriteString(strings.TrimRight(body, "\n"))
	b.WriteString("\n\n")
	if page != "" {
		b.WriteString("Status page: " + page + "\n")
	}
	if k := oneLine(msg.Kind); k != "" {
		b.WriteString("Alert kind: " + k + "\n")
	}
	if d := oneLine(msg.Destination); d != "" {
		b.WriteString("Destination: " + d + "\n")
	}
	b.WriteString("\n-- \nSent by hookbox ([alerts] email_to in its config).\n")
	return strings.ReplaceAll(b.String(), "\n", "\r\n")
}

// plain reports whether body can go as 7bit: ASCII only, no NUL, no line
// longer than SMTP carries.
func plain(body string) bool {
	for _, line := range strings.Split(body, "\r\n") {
		if len(line) > maxLine {
			return false
		}
		for i := 0; i < len(line); i++ {
			if c := line[i]; c == 0 || c >= utf8.RuneSelf {
				return false
			}
		}
	}
	return true
}

// messageID is a unique Message-ID in the sender's domain.
func messageID(from *mail.Address, now time.Time) string {
	domain := "hookbox.invalid"
	if i := strings.LastIndexByte(from.Address, '@'); i >= 0 && i+1 < len(from.Address) {
		domain = from.Address[i+1:]
	}
	var r [8]byte
	rand.Read(r[:])
	return fmt.Sprintf("<%d.%s@%s>", now.UnixNano(), hex.EncodeToString(r[:]), domain)
}
