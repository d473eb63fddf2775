package provider

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Paddle signs ts + ":" + body with the full secret string, including its
// "pdl_ntfset_" prefix: lowercase hex HMAC-SHA256 in "h1" entries of
// "Paddle-Signature: ts=…;h1=…". Several h1 entries are tried; unknown
// schemes (h2, …) are ignored.
const hdrPaddleSignature = "Paddle-Signature"

var paddleList = tsList{sep: ';', tsKey: "ts", sigKey: "h1"}

func init() {
	register("paddle", newPaddle)
	registerSigner("paddle", signPaddle)
}

func newPaddle(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	tol, err := tolerance(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, now time.Time) (Verdict, error) {
		v := r.Header.Get(hdrPaddleSignature)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		ts, unix, err := paddleList.parse(v)
		if err != nil {
			return Verdict{}, err
		}
		if !fresh(unix, now, tol) {
			return Verdict{}, ErrStaleTimestamp
		}
		if !paddleList.match(v, keys, &message{pre: [4]string{ts, ":"}, body: r.Body}) {
			return Verdict{}, ErrBadSignature
		}
		var b struct {
			EventID   string `json:"event_id"`
			EventType string `json:"event_type"`
		}
		decodeBody(r.Body, &b)
		return Verdict{ID: b.EventID, Topic: b.EventType}, nil
	}, nil
}

func signPaddle(s Settings, body []byte, _, _, _ string, now time.Time, h http.Header) error {
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := computeMAC(s.Secrets[0], &message{pre: [4]string{ts, ":"}, body: body})
	h.Set(hdrPaddleSignature, "ts="+ts+";h1="+hex.EncodeToString(mac))
	return nil
}
