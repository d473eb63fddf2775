package app_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"hookbox/app"
)

func TestSearch_In(t *testing.T) {
	for _, tt := range []struct {
		q, body string
		want    bool
	}{
		{"1004", `{"name":"#1004"}`, true},
		{"1004", `{"name":"#1005"}`, false},
		{"#1004", `{"name":"#1004"}`, true},
		{"ORDER", `{"name":"Order #1"}`, true},
		{"order", `{"NAME":"ORDER #1"}`, true},
		{"OrDeR", `ordeR`, true},
		{"order", `orde`, false},
		{"order", `oorder`, true},
		{"order", `ordOrder`, true},
		{"abc", `ab`, false},
		{"abc", ``, false},
		{"a-b", `xA-Bx`, true},
		{"a-b", `xA_Bx`, false},
		{"b-c", `a-cb-c`, true},     // the anchor ("-") found first where it does not match
		{"café", `CAFÉ`, false},     // only ASCII letters fold
		{"café", `CAFé`, true},      // é as it is
		{"ÉCLAIR", `éclair`, false}, // É and é differ in bytes
		{"x\\y", `x\y`, true},
		{"%_%", `a%_%b`, true},
		{"100", "\x00\xff100", true},
		{"zzz", strings.Repeat("zz", 100) + "Z", true},
		{"zzz", strings.Repeat("zZ", 100), true},
		{"zza", strings.Repeat("zZ", 100), false},
		{"aab", "aaab", true}, // a mismatch that falls back to a border
		{"abab", "abaabab", true},
		{"abac", "ababac", true},
		{"AaB", "xaAaAbx", true},
		{"1a1b", "1a1a1b", true},
	} {
		if got := app.NewSearch(tt.q).In([]byte(tt.body)); got != tt.want {
			t.Errorf("NewSearch(%q).In(%q) = %v, want %v", tt.q, tt.body, got, tt.want)
		}
	}
}

// TestSearch_InLinear: In reads a body in O(body + needle) steps whatever
// both hold (issue 42): the red team's needle ('a'×1023 then 'b') over a
// body of 'a's cost ~1,024 comparisons at each of its places before.
func TestSearch_InLinear(t *testing.T) {
	const size = 1 << 20
	for _, tt := range []struct{ name, q, body string }{
		{"first byte everywhere", strings.Repeat("a", app.MaxSearch-1) + "b", strings.Repeat("a", size)},
		{"either case", strings.Repeat("A", app.MaxSearch-1) + "b", strings.Repeat("aA", size/2)},
		{"non-letter anchor", strings.Repeat("1", app.MaxSearch-1) + "2", strings.Repeat("1", size)},
		{"periodic", strings.Repeat("ab", app.MaxSearch/2-1) + "abc", strings.Repeat("ab", size/2)},
		{"near misses", strings.Repeat("a", 511) + "b" + strings.Repeat("a", 511) + "c", strings.Repeat(strings.Repeat("a", 511)+"b", size/512)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, body := app.NewSearch(tt.q), []byte(tt.body)
			if s.In(body) {
				t.Fatalf("In = true, want false")
			}
			if got, most := app.SearchSteps(s, body), 3*(len(body)+len(tt.q)); got > most {
				t.Errorf("In took %d steps over %d bytes, want at most %d", got, len(body), most)
			}
			// Found at the very end, after the same worst case.
			body = append(body[:len(body)-len(tt.q)], tt.q...)
			if !s.In(body) {
				t.Errorf("In = false with the text at the end, want true")
			}
		})
	}
}

// TestSearch_InAgreesWithContains: on random short texts and bodies over
// a small alphabet (letters in both cases, an anchor byte), In agrees with
// bytes.Contains of the lowered body.
func TestSearch_InAgreesWithContains(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	alphabet := "abAB-1"
	text := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		q, body := text(3+r.IntN(6)), text(r.IntN(40))
		want := bytes.Contains(app.LowerASCII([]byte(body)), app.LowerASCII([]byte(q)))
		if got := app.NewSearch(q).In([]byte(body)); got != want {
			t.Fatalf("NewSearch(%q).In(%q) = %v, want %v", q, body, got, want)
		}
	}
}

// In allocates nothing per body: a bbolt search runs it over 200,000
// bodies inside one read transaction.
func TestSearch_InAllocs(t *testing.T) {
	body := []byte(strings.Repeat(`{"id":1004,"Name":"#1004","note":"order"}`, 50))
	for _, q := range []string{"1005", "ORDERS", "#1004"} {
		s := app.NewSearch(q)
		if n := testing.AllocsPerRun(100, func() { s.In(body) }); n != 0 {
			t.Errorf("In(%q) allocates %v times per body, want 0", q, n)
		}
	}
}

func TestCheckSearch(t *testing.T) {
	for q, ok := range map[string]bool{"": false, "ab": false, "abc": true, "éé": false, "ééé": true, "#10": true,
		strings.Repeat("x", app.MaxSearch): true, strings.Repeat("x", app.MaxSearch+1): false} {
		err := app.CheckSearch(q)
		if (err == nil) != ok {
			t.Errorf("CheckSearch(%q) = %v, want ok %v", q, err, ok)
		}
		if err != nil && app.ErrorCode(err) != app.EINVALID {
			t.Errorf("CheckSearch(%q) code = %s, want %s", q, app.ErrorCode(err), app.EINVALID)
		}
	}
}

// BenchmarkSearch_In: one 2 KiB order body, searched for an order name it
// does not have (the whole body read) and for words in either case.
func BenchmarkSearch_In(b *testing.B) {
	body := []byte(`{"id":5800000123456,"name":"#1123456","email":"Buyer123456@Example.com","order_number":1123456,` +
		strings.Repeat(`"line":{"title":"Ceramic Mug","price":"25.00","sku":"MUG-123"},`, 30))[:2048]
	for _, q := range []string{"#1999999", "ceramic bowl", "BUYER999"} {
		s := app.NewSearch(q)
		b.Run(q, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				s.In(body)
			}
		})
	}
}
