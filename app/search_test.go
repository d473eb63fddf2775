package app_test

import (
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
	} {
		if got := app.NewSearch(tt.q).In([]byte(tt.body)); got != tt.want {
			t.Errorf("NewSearch(%q).In(%q) = %v, want %v", tt.q, tt.body, got, tt.want)
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
