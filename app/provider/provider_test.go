package provider_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/provider"
)

// testBody carries every field a provider reads its id or topic from, and
// characters a re-serialising receiver would change.
var testBody = []byte(`{"id":"evt_1","type":"order.created","event_id":"evt_1","event_type":"order.created",` +
	`"hash":"evt_1","scope":"order.created","note":"a/b & <c>"}`)

const (
	testURL   = "https://hooks.example.com/in/shop"
	testID    = "evt_1"
	testTopic = "order.created"
)

// testNow is the injected clock of every test.
var testNow = time.Date(2025, 3, 1, 12, 0, 0, 500_000_000, time.UTC)

// fixture describes how to drive one provider through the common checks.
type fixture struct {
	label    string // sub-test name
	name     string // provider name
	base     provider.Settings
	old, new []byte // two valid secrets, for rotation
	wrong    []byte // a valid secret that signed nothing
	// timestamped schemes are checked against the clock.
	timestamped bool
	sigHeader   string
	malformed   string // a value of sigHeader that cannot be a signature
	want        provider.Verdict
	signsBody   bool
	opts        provider.SignOptions // how the fixture's requests are signed
}

// settings returns the fixture's settings with the given secrets.
func (f fixture) settings(secrets ...[]byte) provider.Settings {
	s := f.base
	s.Secrets = secrets
	return s
}

func whsec(s string) []byte { return []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte(s))) }

func fixtures() []fixture {
	body := provider.Verdict{ID: testID, Topic: testTopic}
	return []fixture{
		{label: "shopify", name: "shopify", sigHeader: "X-Shopify-Hmac-Sha256", malformed: "not base64!", want: body, signsBody: true},
		{label: "shopify-new", name: "shopify", sigHeader: "shopify-hmac-sha256", malformed: "not base64!", want: body, signsBody: true,
			opts: provider.SignOptions{ShopifyHeaders: provider.ShopifyNew}},
		{label: "stripe", name: "stripe", timestamped: true, sigHeader: "Stripe-Signature", malformed: "v1=abc", want: body, signsBody: true,
			old: []byte("whsec_old"), new: []byte("whsec_new"), wrong: []byte("whsec_wrong")},
		{label: "woocommerce", name: "woocommerce", sigHeader: "X-WC-Webhook-Signature", malformed: "%%%", signsBody: true,
			want: provider.Verdict{ID: sha256Hex(testBody), Topic: testTopic}},
		{label: "bigcommerce", name: "bigcommerce", timestamped: true, sigHeader: "webhook-signature", malformed: "v1", want: body, signsBody: true},
		{label: "square", name: "square", sigHeader: "x-square-hmacsha256-signature", malformed: "abc", want: body, signsBody: true},
		{label: "paddle", name: "paddle", timestamped: true, sigHeader: "Paddle-Signature", malformed: "ts=abc;h1=00", want: body, signsBody: true,
			old: []byte("pdl_ntfset_01_old"), new: []byte("pdl_ntfset_01_new"), wrong: []byte("pdl_ntfset_01_wrong")},
		{label: "github", name: "github", sigHeader: "X-Hub-Signature-256", malformed: "sha1=abc", want: body, signsBody: true},
		{label: "standard", name: "standard", timestamped: true, sigHeader: "webhook-signature", malformed: "v1a,abc", want: body, signsBody: true,
			old: whsec("old secret 0123456789"), new: whsec("new secret 0123456789"), wrong: whsec("wrong secret 012345678")},
		{label: "hmac-hex-prefix", name: "hmac", sigHeader: "X-Signature", malformed: "deadbeef", signsBody: true,
			base: provider.Settings{SignatureHeader: "x-signature", SignaturePrefix: "sha256="}},
		{label: "hmac-base64", name: "hmac", sigHeader: "X-Signature", malformed: "****", signsBody: true,
			base: provider.Settings{SignatureHeader: "X-Signature", SignatureEncoding: "base64"}},
		{label: "token", name: "token", sigHeader: "Authorization", malformed: "Basic dXNlcjpwYXNz", want: body},
	}
}

// withDefaults fills the secrets a fixture leaves to the default.
func (f fixture) withDefaults() fixture {
	if f.old == nil {
		f.old, f.new, f.wrong = []byte("old-secret"), []byte("new-secret"), []byte("wrong-secret")
	}
	return f
}

// mustVerifier builds a verifier or fails the test.
func mustVerifier(tb testing.TB, name string, s provider.Settings) provider.Verifier {
	tb.Helper()
	v, err := provider.New(name, s)
	if err != nil {
		tb.Fatalf("New(%s): %v", name, err)
	}
	return v
}

// mustSign signs testBody with the fixture's secret at time at.
func mustSign(tb testing.TB, f fixture, secret []byte, body []byte, at time.Time) http.Header {
	tb.Helper()
	h, err := provider.SignWith(f.name, f.settings(secret), body, testURL, testID, testTopic, at, f.opts)
	if err != nil {
		tb.Fatalf("Sign(%s): %v", f.name, err)
	}
	return h
}

func TestProviders(t *testing.T) {
	for _, f := range fixtures() {
		f := f.withDefaults()
		t.Run(f.label, func(t *testing.T) {
			verify := mustVerifier(t, f.name, f.settings(f.new))
			signed := mustSign(t, f, f.new, testBody, testNow)
			check := func(t *testing.T, verify provider.Verifier, h http.Header, body []byte, now time.Time, want error) provider.Verdict {
				t.Helper()
				got, err := verify(provider.Request{Body: body, Header: h, URL: testURL}, now)
				if want == nil && err != nil || want != nil && !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
				return got
			}

			t.Run("OK", func(t *testing.T) {
				if got := check(t, verify, signed, testBody, testNow, nil); got != f.want {
					t.Errorf("verdict = %+v, want %+v", got, f.want)
				}
				if got, want := signed.Get("Content-Type"), "application/json"; got != want {
					t.Errorf("Content-Type = %q, want %q", got, want)
				}
			})
			t.Run("ErrBadSignature/TamperedBody", func(t *testing.T) {
				tampered := []byte(strings.Replace(string(testBody), "evt_1", "evt_2", 1))
				if !f.signsBody {
					t.Skip("the token provider does not sign the body")
				}
				check(t, verify, signed, tampered, testNow, provider.ErrBadSignature)
			})
			t.Run("ErrBadSignature/WrongSecret", func(t *testing.T) {
				check(t, mustVerifier(t, f.name, f.settings(f.wrong)), signed, testBody, testNow, provider.ErrBadSignature)
			})
			t.Run("Rotation", func(t *testing.T) {
				both := mustVerifier(t, f.name, f.settings(f.old, f.new))
				for _, sec := range [][]byte{f.old, f.new} {
					check(t, both, mustSign(t, f, sec, testBody, testNow), testBody, testNow, nil)
				}
				check(t, both, mustSign(t, f, f.wrong, testBody, testNow), testBody, testNow, provider.ErrBadSignature)
			})
			t.Run("ErrMalformed", func(t *testing.T) {
				h := signed.Clone()
				h.Set(f.sigHeader, f.malformed)
				check(t, verify, h, testBody, testNow, provider.ErrMalformed)
			})
			t.Run("ErrMissingSignature", func(t *testing.T) {
				h := signed.Clone()
				h.Del(f.sigHeader)
				check(t, verify, h, testBody, testNow, provider.ErrMissingSignature)
			})
			t.Run("ErrStaleTimestamp", func(t *testing.T) {
				tol := provider.DefaultTolerance
				if !f.timestamped {
					// Without a timestamp, the clock plays no part.
					check(t, verify, signed, testBody, testNow.Add(24*time.Hour), nil)
					return
				}
				for _, d := range []time.Duration{-tol - time.Second, tol + time.Second, -24 * time.Hour, 24 * time.Hour} {
					h := mustSign(t, f, f.new, testBody, testNow.Add(d))
					check(t, verify, h, testBody, testNow, provider.ErrStaleTimestamp)
				}
				// At the edge of the tolerance, both ways, the request is still fresh.
				for _, d := range []time.Duration{-tol, tol} {
					h := mustSign(t, f, f.new, testBody, testNow.Truncate(time.Second).Add(d))
					check(t, verify, h, testBody, testNow.Truncate(time.Second), nil)
				}
				// A source's own tolerance applies.
				s := f.settings(f.new)
				s.Tolerance = time.Minute
				h := mustSign(t, f, f.new, testBody, testNow.Add(-2*time.Minute))
				check(t, mustVerifier(t, f.name, s), h, testBody, testNow, provider.ErrStaleTimestamp)
			})
			t.Run("NotJSON", func(t *testing.T) {
				// The id rule may need the body; a body that is not JSON yields no id, no panic.
				body := []byte("<xml>not json</xml>")
				got := check(t, verify, mustSign(t, f, f.new, body, testNow), body, testNow, nil)
				if got.Ping {
					t.Errorf("Ping for a signed request")
				}
			})
		})
	}
}

func TestNames(t *testing.T) {
	want := []string{"bigcommerce", "github", "hmac", "paddle", "shopify", "square", "standard", "stripe", "token", "woocommerce"}
	if got := provider.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		if !provider.Known(n) {
			t.Errorf("Known(%q) = false", n)
		}
	}
	if provider.Known("svix") {
		t.Errorf(`Known("svix") = true`)
	}
}

func TestNew(t *testing.T) {
	secret := [][]byte{[]byte("s")}
	t.Run("ErrUnknownProvider", func(t *testing.T) {
		if _, err := provider.New("nope", provider.Settings{Secrets: secret}); err == nil {
			t.Error("no error")
		}
		if _, err := provider.Sign("nope", provider.Settings{Secrets: secret}, nil, "", "", "", testNow); err == nil {
			t.Error("Sign: no error")
		}
	})
	t.Run("ErrNoSecret", func(t *testing.T) {
		for _, n := range provider.Names() {
			s := provider.Settings{SignatureHeader: "X-Sig"}
			if _, err := provider.New(n, s); err == nil {
				t.Errorf("%s: no error", n)
			}
			if _, err := provider.Sign(n, s, testBody, testURL, testID, testTopic, testNow); err == nil {
				t.Errorf("Sign %s: no error", n)
			}
		}
	})
	t.Run("ErrNegativeTolerance", func(t *testing.T) {
		for _, n := range []string{"stripe", "paddle", "standard", "bigcommerce"} {
			s := provider.Settings{Secrets: [][]byte{whsec("k")}, Tolerance: -time.Second}
			if _, err := provider.New(n, s); err == nil {
				t.Errorf("%s: no error", n)
			}
		}
	})
	t.Run("HMAC", func(t *testing.T) {
		if _, err := provider.New("hmac", provider.Settings{Secrets: secret}); err == nil {
			t.Error("no signature header: no error")
		}
		_, err := provider.New("hmac", provider.Settings{Secrets: secret, SignatureHeader: "X-Sig", SignatureEncoding: "base32"})
		if err == nil {
			t.Error("unknown encoding: no error")
		}
	})
	t.Run("StandardSecretNotBase64", func(t *testing.T) {
		const bad = "whsec_s3cr3t!!not-base64"
		_, err := provider.New("standard", provider.Settings{Secrets: [][]byte{whsec("fine"), []byte(bad)}})
		if err == nil {
			t.Fatal("no error")
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error %q shows the secret", err)
		}
		if !strings.Contains(err.Error(), "secret 2") {
			t.Errorf("error %q does not say which secret", err)
		}
	})
	t.Run("StandardSecretUnpadded", func(t *testing.T) {
		// Some tools print the secret without base64 padding; the key is the same.
		padded := whsec("sixteen byte key")
		raw := []byte(strings.TrimRight(string(padded), "="))
		h, err := provider.Sign("standard", provider.Settings{Secrets: [][]byte{padded}}, testBody, "", testID, "", testNow)
		if err != nil {
			t.Fatal(err)
		}
		verify := mustVerifier(t, "standard", provider.Settings{Secrets: [][]byte{raw}})
		if _, err := verify(provider.Request{Body: testBody, Header: h}, testNow); err != nil {
			t.Error(err)
		}
	})
	t.Run("TokenEmptySecret", func(t *testing.T) {
		if _, err := provider.New("token", provider.Settings{Secrets: [][]byte{[]byte("ok"), {}}}); err == nil {
			t.Error("no error")
		}
	})
}

func TestShopify_EventIDPreferred(t *testing.T) {
	s := provider.Settings{Secrets: [][]byte{[]byte("k")}}
	h, err := provider.Sign("shopify", s, testBody, "", "", testTopic, testNow)
	if err != nil {
		t.Fatal(err)
	}
	verify := mustVerifier(t, "shopify", s)
	r := provider.Request{Body: testBody, Header: h}
	for _, tc := range []struct{ event, hook, want string }{
		{"ev", "wh", "ev"},
		{"", "wh", "wh"},
		{"", "", ""},
	} {
		setOrDel(h, "X-Shopify-Event-Id", tc.event)
		setOrDel(h, "X-Shopify-Webhook-Id", tc.hook)
		got, err := verify(r, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != tc.want {
			t.Errorf("event %q hook %q: ID = %q, want %q", tc.event, tc.hook, got.ID, tc.want)
		}
	}
}

func setOrDel(h http.Header, k, v string) {
	if v == "" {
		h.Del(k)
		return
	}
	h.Set(k, v)
}

func TestSquare_ErrNoURL(t *testing.T) {
	s := provider.Settings{Secrets: [][]byte{[]byte("k")}}
	h, err := provider.Sign("square", s, testBody, testURL, "", "", testNow)
	if err != nil {
		t.Fatal(err)
	}
	verify := mustVerifier(t, "square", s)
	if _, err := verify(provider.Request{Body: testBody, Header: h}, testNow); !errors.Is(err, provider.ErrNoURL) {
		t.Errorf("err = %v, want ErrNoURL", err)
	}
	if _, err := provider.Sign("square", s, testBody, "", "", "", testNow); !errors.Is(err, provider.ErrNoURL) {
		t.Errorf("Sign: err = %v, want ErrNoURL", err)
	}
}

func TestWooCommerce_Ping(t *testing.T) {
	s := provider.Settings{Secrets: [][]byte{[]byte("k")}}
	verify := mustVerifier(t, "woocommerce", s)
	for _, tc := range []struct {
		body string
		ping bool
	}{
		{"webhook_id=42", true},
		{"webhook_id=1", true},
		{"webhook_id=12345678901234567890", true},
		{"webhook_id=123456789012345678901", false},
		{"webhook_id=42&x=1", false},
		{"webhook_id=", false},
		{"webhook_id=4a", false},
		{"webhook_id=-1", false},
		{" webhook_id=42", false},
		{"webhook_id=42\n", false},
		{"Webhook_id=42", false},
		{"", false},
		{`{"webhook_id":42}`, false},
	} {
		got, err := verify(provider.Request{Body: []byte(tc.body), Header: http.Header{}}, testNow)
		switch {
		case tc.ping && (err != nil || got != provider.Verdict{Ping: true}):
			t.Errorf("%q: %+v, %v; want a ping", tc.body, got, err)
		case !tc.ping && !errors.Is(err, provider.ErrMissingSignature):
			t.Errorf("%q: %+v, %v; want ErrMissingSignature", tc.body, got, err)
		}
	}
	t.Run("SignedPingBodyIsNoPing", func(t *testing.T) {
		body := []byte("webhook_id=42")
		h, err := provider.Sign("woocommerce", s, body, "", "", "", testNow)
		if err != nil {
			t.Fatal(err)
		}
		got, err := verify(provider.Request{Body: body, Header: h}, testNow)
		if err != nil || got.Ping {
			t.Errorf("%+v, %v; want a plain verdict", got, err)
		}
		h.Set("X-WC-Webhook-Signature", "AAAA")
		if _, err := verify(provider.Request{Body: body, Header: h}, testNow); !errors.Is(err, provider.ErrMalformed) {
			t.Errorf("bad signature on a ping body: err = %v, want ErrMalformed", err)
		}
	})
}

func TestToken(t *testing.T) {
	s := provider.Settings{Secrets: [][]byte{[]byte("tok-1"), []byte("a-much-longer-second-token")}}
	verify := mustVerifier(t, "token", s)
	do := func(auth string, extra ...string) (provider.Verdict, error) {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return verify(provider.Request{Body: testBody, Header: h}, testNow)
	}
	for _, tc := range []struct {
		auth string
		want error
	}{
		{"Bearer tok-1", nil},
		{"bearer a-much-longer-second-token", nil},
		{"BEARER   tok-1", nil},
		{"Bearer tok-", provider.ErrBadSignature},
		{"Bearer tok-12", provider.ErrBadSignature},
		{"Bearer a-much-longer-second-token tok-1", provider.ErrBadSignature},
		{"Bearer", provider.ErrMalformed},
		{"Bearer ", provider.ErrMalformed},
		{"tok-1", provider.ErrMalformed},
		{"Basic tok-1", provider.ErrMalformed},
		{"", provider.ErrMissingSignature},
	} {
		if _, err := do(tc.auth); tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%q: err = %v, want %v", tc.auth, err, tc.want)
		}
	}
	t.Run("IdempotencyKey", func(t *testing.T) {
		got, err := do("Bearer tok-1", "Idempotency-Key", "k-1", "X-Event-Type", "stock.changed")
		if err != nil {
			t.Fatal(err)
		}
		if want := (provider.Verdict{ID: "k-1", Topic: "stock.changed"}); got != want {
			t.Errorf("verdict = %+v, want %+v", got, want)
		}
	})
	t.Run("GeneratedID", func(t *testing.T) {
		a, err := do("Bearer tok-1")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := do("Bearer tok-1")
		if !regexp.MustCompile(`^gen_[0-9a-f]{32}$`).MatchString(a.ID) {
			t.Errorf("generated ID %q, want gen_ and 32 hex digits", a.ID)
		}
		if a.ID == b.ID {
			t.Errorf("two requests got the same generated ID %q", a.ID)
		}
	})
}

// TestSignatureHeaders checks how the list-shaped signature headers are
// parsed: garbage is refused with the right error, never a panic, and the
// harmless oddities real senders produce are tolerated.
func TestSignatureHeaders(t *testing.T) {
	hexMAC := func(f fixture, secret []byte, at time.Time) (ts, sig string) {
		h := mustSign(t, f, secret, testBody, at)
		v := h.Get(f.sigHeader)
		for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
			k, val, _ := strings.Cut(part, "=")
			switch k {
			case "t", "ts":
				ts = val
			case "v1", "h1":
				sig = val
			}
		}
		return ts, sig
	}
	huge := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name    string
		sep, tk string
		sk      string
	}{
		{"stripe", ",", "t", "v1"},
		{"paddle", ";", "ts", "h1"},
	} {
		var f fixture
		for _, fx := range fixtures() {
			if fx.label == tc.name {
				f = fx.withDefaults()
			}
		}
		ts, sig := hexMAC(f, f.new, testNow)
		_, other := hexMAC(f, f.wrong, testNow)
		j := func(parts ...string) string { return strings.Join(parts, tc.sep) }
		t.Run(tc.name, func(t *testing.T) {
			verify := mustVerifier(t, f.name, f.settings(f.new))
			for _, c := range []struct {
				header string
				want   error
			}{
				{j(tc.tk+"="+ts, tc.sk+"="+sig), nil},
				{j(tc.sk+"="+sig, tc.tk+"="+ts), nil},
				{j("", tc.tk+"="+ts, "", "", tc.sk+"="+sig, ""), nil},
				{j(" "+tc.tk+" = "+ts+" ", " "+tc.sk+"="+sig), nil},
				{j(tc.tk+"="+ts, "garbage", tc.sk+"="+sig), nil},
				{j(tc.tk+"="+ts, tc.sk+"="+other, tc.sk+"="+sig), nil},
				{j(tc.tk+"="+ts, tc.sk+"=zz", tc.sk+"="+sig), nil},
				{j(tc.tk+"="+ts, tc.sk+"="+strings.ToUpper(sig)), nil},
				{j(tc.tk+"="+ts, "v2="+sig, "h2=RANDOM", tc.sk+"="+sig), nil},
				{j(tc.tk+"="+ts, tc.sk+"="+other), provider.ErrBadSignature},
				{j(tc.tk+"="+ts, tc.sk+"="+other, "v0="+sig, "h2="+sig), provider.ErrBadSignature},
				{j(tc.tk+"="+ts, tc.sk+"="+sig+"00"), provider.ErrMalformed},
				{j(tc.tk+"="+ts, tc.sk+"="), provider.ErrMalformed},
				{j(tc.tk+"="+ts, tc.sk+"=zz"), provider.ErrMalformed},
				{j(tc.tk+"="+ts, tc.tk+"="+ts, tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.sk + "=" + sig), provider.ErrMalformed},
				{j(tc.tk + "=" + ts), provider.ErrMalformed},
				{j(tc.tk+"=", tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.tk+"=abc", tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.tk+"=-"+ts, tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.tk+"=+"+ts, tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.tk+"=0x10", tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.tk+"=99999999999999999999", tc.sk+"="+sig), provider.ErrMalformed},
				{j(tc.tk+"=9223372036854775807", tc.sk+"="+sig), provider.ErrStaleTimestamp},
				{j(tc.tk+"=0", tc.sk+"="+sig), provider.ErrStaleTimestamp},
				{j(tc.tk+"="+ts, tc.sk+"="+sig, "x="+huge), provider.ErrMalformed},
				{huge, provider.ErrMalformed},
				{tc.sep + tc.sep + tc.sep, provider.ErrMalformed},
				{"=", provider.ErrMalformed},
				{"", provider.ErrMissingSignature},
			} {
				h := http.Header{}
				h.Set(f.sigHeader, c.header)
				_, err := verify(provider.Request{Body: testBody, Header: h}, testNow)
				if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
					t.Errorf("%.80q: err = %v, want %v", c.header, err, c.want)
				}
			}
		})
	}

	t.Run("standard", func(t *testing.T) {
		s := provider.Settings{Secrets: [][]byte{whsec("key")}}
		signed, err := provider.Sign("standard", s, testBody, "", testID, "", testNow)
		if err != nil {
			t.Fatal(err)
		}
		good := signed.Get("webhook-signature")
		other, _ := provider.Sign("standard", provider.Settings{Secrets: [][]byte{whsec("other")}}, testBody, "", testID, "", testNow)
		bad := other.Get("webhook-signature")
		ts := signed.Get("webhook-timestamp")
		verify := mustVerifier(t, "standard", s)
		for _, c := range []struct {
			name             string
			id, ts, sig      string
			svix             bool // send the svix-* names instead
			svixSig, svixTS  string
			want             error
			wantID, wantType string
		}{
			{name: "OK", id: testID, ts: ts, sig: good},
			{name: "Svix", id: testID, ts: ts, sig: good, svix: true},
			{name: "SeveralEntries", id: testID, ts: ts, sig: bad + " v1a,AAAA " + good},
			{name: "ExtraSpaces", id: testID, ts: ts, sig: "  " + good + "   "},
			{name: "UnknownVersionOnly", id: testID, ts: ts, sig: "v1a," + strings.TrimPrefix(good, "v1,"), want: provider.ErrMalformed},
			{name: "Unpadded", id: testID, ts: ts, sig: strings.TrimRight(good, "="), want: provider.ErrMalformed},
			{name: "NoComma", id: testID, ts: ts, sig: "v1" + strings.TrimPrefix(good, "v1,"), want: provider.ErrMalformed},
			{name: "Wrong", id: testID, ts: ts, sig: bad, want: provider.ErrBadSignature},
			{name: "OtherID", id: "evt_2", ts: ts, sig: good, want: provider.ErrBadSignature},
			{name: "NoID", ts: ts, sig: good, want: provider.ErrMalformed},
			{name: "NoTimestamp", id: testID, sig: good, want: provider.ErrMalformed},
			{name: "TimestampNotDigits", id: testID, ts: ts + "s", sig: good, want: provider.ErrMalformed},
			{name: "TimestampOverflow", id: testID, ts: "18446744073709551616", sig: good, want: provider.ErrMalformed},
			{name: "TimestampPadded", id: testID, ts: "0" + ts, sig: good, want: provider.ErrBadSignature},
			{name: "Huge", id: testID, ts: ts, sig: good + " " + strings.Repeat("v1,AAAA ", 1<<15), want: provider.ErrMalformed},
			{name: "NoSignature", id: testID, ts: ts, want: provider.ErrMissingSignature},
			{name: "MixedNames", id: testID, ts: ts, svixSig: good, svixTS: ts, want: provider.ErrMissingSignature},
		} {
			t.Run(c.name, func(t *testing.T) {
				h := http.Header{}
				prefix := "webhook-"
				if c.svix {
					prefix = "svix-"
				}
				setOrDel(h, prefix+"id", c.id)
				setOrDel(h, prefix+"timestamp", c.ts)
				setOrDel(h, prefix+"signature", c.sig)
				if c.svixSig != "" {
					h.Set("svix-signature", c.svixSig)
					h.Set("svix-timestamp", c.svixTS)
				}
				_, err := verify(provider.Request{Body: testBody, Header: h}, testNow)
				if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
					t.Errorf("err = %v, want %v", err, c.want)
				}
			})
		}
	})

	t.Run("single", func(t *testing.T) {
		for _, c := range []struct {
			name, header, value string
			s                   provider.Settings
			want                error
		}{
			{"shopify", "X-Shopify-Hmac-Sha256", strings.Repeat("A", 43) + "=", provider.Settings{}, provider.ErrBadSignature},
			{"shopify", "X-Shopify-Hmac-Sha256", strings.Repeat("A", 42) + "B=", provider.Settings{}, provider.ErrMalformed}, // non-zero trailing bits
			{"shopify", "X-Shopify-Hmac-Sha256", strings.Repeat("A", 43), provider.Settings{}, provider.ErrMalformed},
			{"shopify", "X-Shopify-Hmac-Sha256", strings.Repeat("A", 1<<16), provider.Settings{}, provider.ErrMalformed},
			{"github", "X-Hub-Signature-256", "sha256=" + strings.Repeat("0", 64), provider.Settings{}, provider.ErrBadSignature},
			{"github", "X-Hub-Signature-256", strings.Repeat("0", 64), provider.Settings{}, provider.ErrMalformed},
			{"github", "X-Hub-Signature-256", "sha256=" + strings.Repeat("0", 63), provider.Settings{}, provider.ErrMalformed},
			{"github", "X-Hub-Signature-256", "sha256=" + strings.Repeat("g", 64), provider.Settings{}, provider.ErrMalformed},
			{"hmac", "X-Sig", strings.Repeat("0", 64), provider.Settings{SignatureHeader: "X-Sig"}, provider.ErrBadSignature},
			{"hmac", "X-Sig", strings.Repeat("A", 43), provider.Settings{SignatureHeader: "X-Sig", SignatureEncoding: "base64"}, provider.ErrBadSignature},
			{"hmac", "X-Sig", "sha256" + strings.Repeat("0", 64), provider.Settings{SignatureHeader: "X-Sig", SignaturePrefix: "sha256="}, provider.ErrMalformed},
			{"hmac", "X-Sig", "sha", provider.Settings{SignatureHeader: "X-Sig", SignaturePrefix: "sha256="}, provider.ErrMalformed},
		} {
			c.s.Secrets = [][]byte{[]byte("k")}
			verify := mustVerifier(t, c.name, c.s)
			h := http.Header{}
			h.Set(c.header, c.value)
			if _, err := verify(provider.Request{Body: testBody, Header: h, URL: testURL}, testNow); !errors.Is(err, c.want) {
				t.Errorf("%s %.80q: err = %v, want %v", c.name, c.value, err, c.want)
			}
		}
	})

	t.Run("hmacBase64Unpadded", func(t *testing.T) {
		s := provider.Settings{Secrets: [][]byte{[]byte("k")}, SignatureHeader: "X-Sig", SignatureEncoding: "base64"}
		h, err := provider.Sign("hmac", s, testBody, "", "", "", testNow)
		if err != nil {
			t.Fatal(err)
		}
		h.Set("X-Sig", strings.TrimRight(h.Get("X-Sig"), "="))
		if _, err := mustVerifier(t, "hmac", s)(provider.Request{Body: testBody, Header: h}, testNow); err != nil {
			t.Error(err)
		}
	})
}

func TestNilHeader(t *testing.T) {
	for _, n := range provider.Names() {
		s := provider.Settings{Secrets: [][]byte{whsec("k")}, SignatureHeader: "X-Sig"}
		verify := mustVerifier(t, n, s)
		if _, err := verify(provider.Request{Body: testBody, URL: testURL}, testNow); !errors.Is(err, provider.ErrMissingSignature) {
			t.Errorf("%s: err = %v, want ErrMissingSignature", n, err)
		}
	}
}
