package httpsend

import (
	"testing"
	"time"
)

// The sender's answer carries what the attempt rule needs: a 410 refuses
// the delivery for good (it used to be left to the dispatcher to read the
// status: Refused was never set), and a Retry-After counts on a 429 or a
// 503 only, where HTTP gives it that meaning.
func TestSend_RefusedAndRetryAfter(t *testing.T) {
	s := newTestSender(t)
	for _, tt := range []struct {
		name, answer string
		refused      bool
		retryAfter   time.Duration
	}{
		{"Gone", "HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n", true, 0},
		{"TooMany", "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n", false, 3 * time.Second},
		{"Unavailable", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n", false, 7 * time.Second},
		{"ServerError", "HTTP/1.1 500 Internal Server Error\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n", false, 0},
		{"NotFound", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := rawDest(t, tt.answer)
			res := sendTimes(t, s, url, 1)[0]
			if res.Delivered || res.Refused != tt.refused || res.RetryAfter != tt.retryAfter {
				t.Fatalf("answer = %+v; want refused %v, Retry-After %v", res, tt.refused, tt.retryAfter)
			}
		})
	}
}
