package web

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCheckHead(t *testing.T) {
	for _, tt := range []struct {
		name, head string
		want       int
	}{
		{"Plain", "Host: x\r\nContent-Length: 5\r\n\r\n", 0},
		{"NoBody", "Host: x\r\n\r\n", 0},
		{"Empty", "", 0},
		{"SameLengthTwice", "Content-Length: 5\r\ncontent-length:5 \r\n\r\n", 0},
		{"TwoLengths", "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
		{"TwoLengthsAnyCase", "content-length: 6\r\nCONTENT-LENGTH: 5\r\n\r\n", 400},
		{"LeadingZero", "Content-Length: 5\r\nContent-Length: 05\r\n\r\n", 400},
		{"LengthAndChunked", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"ChunkedAndLength", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400},
		{"ChunkedOnly", "Transfer-Encoding: chunked\r\n\r\n", 0},
		{"BareLF", "Content-Length: 5\nContent-Length: 6\n\n", 400},
		{"Gzip", "Content-Encoding: gzip\r\n\r\n", 415},
		{"GzipGzip", "Content-Encoding: gzip, gzip\r\n\r\n", 415},
		{"IdentityThenGzip", "Content-Encoding: identity\r\nContent-Encoding: gzip\r\n\r\n", 415},
		{"EmptyThenGzip", "Content-Encoding:\r\nContent-Encoding: br\r\n\r\n", 415},
		{"Identity", "Content-Encoding: identity\r\n\r\n", 0},
		{"IdentityList", "Content-Encoding: Identity , identity,\r\n\r\n", 0},
		{"EmptyEncoding", "Content-Encoding: \r\n\r\n", 0},
		{"FramingFirst", "Content-Encoding: gzip\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
		{"FoldedLineIsNotAField", "X-A: b\r\n Content-Length: 9\r\nContent-Length: 5\r\n\r\n", 0},
		{"SimilarNames", "Content-Lengths: 9\r\nX-Content-Length: 8\r\nContent-Length: 5\r\nContent-Encodings: gzip\r\n\r\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, msg := checkHead([]byte(tt.head)); got != tt.want {
				t.Fatalf("checkHead(%q) = %d %q; want %d", tt.head, got, msg, tt.want)
			}
		})
	}
}

// checkHead runs on every request: it allocates nothing.
func TestCheckHead_NoAllocations(t *testing.T) {
	raw := []byte("Host: hookbox\r\nContent-Type: application/json\r\nContent-Length: 2048\r\nX-Shopify-Topic: orders/create\r\n" +
		"X-Shopify-Hmac-Sha256: abc=\r\nContent-Encoding: identity\r\n\r\n")
	if n := testing.AllocsPerRun(100, func() { checkHead(raw) }); n != 0 {
		t.Fatalf("checkHead allocates %v times a call", n)
	}
}

// checkHeadPlain is checkHead written the obvious way, with strings.
func checkHeadPlain(head string) int {
	var lengths []string
	chunked, encoded := false, false
	for _, line := range strings.Split(head, "\n") {
		line = strings.TrimSuffix(line, "\r")
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		value = strings.Trim(value, " \t")
		switch strings.ToLower(name) {
		case "content-length":
			lengths = append(lengths, value)
		case "transfer-encoding":
			chunked = true
		case "content-encoding":
			for _, tok := range strings.Split(value, ",") {
				if tok = strings.Trim(tok, " \t"); tok != "" && !strings.EqualFold(tok, "identity") {
					encoded = true
				}
			}
		}
	}
	for _, l := range lengths {
		if l != lengths[0] {
			return 400
		}
	}
	switch {
	case len(lengths) > 0 && chunked:
		return 400
	case encoded:
		return 415
	}
	return 0
}

// FuzzCheckHead feeds the raw header check anything a client can send:
// it never panics and agrees with the plain version.
func FuzzCheckHead(f *testing.F) {
	for _, s := range []string{"", "\r\n", "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", "Content-Encoding: gzip, gzip\r\n",
		"Transfer-Encoding: chunked\r\nContent-Length: 1\r\n", ":\r\n", " Content-Length: 1\r\n", "Content-Encoding: identity,,\r\n",
		"content-encoding:\tIDENTITY\t\r\n", "Content-Length: 1\nContent-Length: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, msg := checkHead(raw)
		if want := checkHeadPlain(string(raw)); got != want {
			t.Fatalf("checkHead(%q) = %d %q; the plain version says %d", raw, got, msg, want)
		}
		if (got == 0) != (msg == "") {
			t.Fatalf("checkHead(%q) = %d with message %q", raw, got, msg)
		}
	})
}

func TestForwardedFor(t *testing.T) {
	trusted := func(a netip.Addr) bool {
		return netip.MustParsePrefix("10.0.0.0/8").Contains(a) || a == netip.MustParseAddr("127.0.0.1")
	}
	proxy := netip.MustParseAddr("127.0.0.1")
	for _, tt := range []struct {
		name   string
		values []string
		want   string
	}{
		{"None", nil, "127.0.0.1"},
		{"One", []string{"203.0.113.7"}, "203.0.113.7"},
		{"ClientClaimsAnAddress", []string{"6.6.6.6, 203.0.113.7"}, "203.0.113.7"},
		{"ThroughTrustedHops", []string{"6.6.6.6, 203.0.113.7, 10.1.2.3"}, "203.0.113.7"},
		{"SeveralHeaders", []string{"6.6.6.6", "203.0.113.7, 10.1.2.3"}, "203.0.113.7"},
		{"AllTrusted", []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},
		{"IPv6", []string{"2001:db8::1"}, "2001:db8::1"},
		{"Mapped", []string{"::ffff:203.0.113.7"}, "203.0.113.7"},
		{"GarbageNearest", []string{"203.0.113.7, garbage"}, "127.0.0.1"},
		{"GarbageBehindTrusted", []string{"garbage, 10.1.2.3"}, "10.1.2.3"},
		{"WithPort", []string{"203.0.113.7:443"}, "127.0.0.1"},
		{"Zone", []string{"fe80::1%eth0"}, "127.0.0.1"},
		{"Spaces", []string{" 6.6.6.6 ,\t203.0.113.7 "}, "203.0.113.7"},
		{"EmptyEntry", []string{"203.0.113.7,"}, "127.0.0.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var values [][]byte
			for _, v := range tt.values {
				values = append(values, []byte(v))
			}
			if got := forwardedFor(values, proxy, trusted); got.String() != tt.want {
				t.Fatalf("forwardedFor(%q) = %s; want %s", tt.values, got, tt.want)
			}
		})
	}
}

// FuzzForwardedFor feeds X-Forwarded-For values anything a client can
// send through a proxy: it never panics, and the client found is a valid
// address without a zone, either the peer or one written in the header.
func FuzzForwardedFor(f *testing.F) {
	for _, s := range []string{"", "1.2.3.4", "1.2.3.4, 10.0.0.1", "garbage", ",,,", "::1", "::ffff:10.0.0.1, x", " 1.2.3.4 ,"} {
		f.Add(s, "10.0.0.2")
	}
	trusted := func(a netip.Addr) bool { return netip.MustParsePrefix("10.0.0.0/8").Contains(a) }
	peer := netip.MustParseAddr("10.0.0.9")
	f.Fuzz(func(t *testing.T, first, second string) {
		got := forwardedFor([][]byte{[]byte(first), []byte(second)}, peer, trusted)
		if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
			t.Fatalf("forwardedFor(%q, %q) = %v", first, second, got)
		}
		if got == peer {
			return
		}
		for _, e := range strings.Split(first+","+second, ",") {
			if a, err := netip.ParseAddr(strings.Trim(e, " \t")); err == nil && a.Unmap() == got {
				return
			}
		}
		t.Fatalf("forwardedFor(%q, %q) = %v: neither the peer nor in the header", first, second, got)
	})
}
