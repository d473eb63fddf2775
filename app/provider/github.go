package provider

import (
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// GitHub signs the raw body: "sha256=" and the lowercase hex HMAC-SHA256.
const (
	hdrGitHubSignature = "X-Hub-Signature-256"
	hdrGitHubDelivery  = "X-Github-Delivery" // canonical form of X-GitHub-Delivery
	hdrGitHubEvent     = "X-Github-Event"    // canonical form of X-GitHub-Event
	gitHubPrefix       = "sha256="
)

func init() {
	register("github", newGitHub)
	registerSigner("github", signGitHub)
}

func newGitHub(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		v := r.Header.Get(hdrGitHubSignature)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		hexSig, ok := strings.CutPrefix(v, gitHubPrefix)
		var sig [macSize]byte
		if !ok || !decodeHex(hexSig, &sig) {
			return Verdict{}, ErrMalformed
		}
		if !matchOne(keys, &message{body: r.Body}, &sig) {
			return Verdict{}, ErrBadSignature
		}
		return Verdict{ID: r.Header.Get(hdrGitHubDelivery), Topic: r.Header.Get(hdrGitHubEvent)}, nil
	}, nil
}

func signGitHub(s Settings, body []byte, _, id, topic string, _ time.Time, h http.Header) error {
	mac := computeMAC(s.Secrets[0], &message{body: body})
	h.Set(hdrGitHubSignature, gitHubPrefix+hex.EncodeToString(mac))
	setIf(h, hdrGitHubDelivery, id)
	setIf(h, hdrGitHubEvent, topic)
	return nil
}
