package rules_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/rules"
)

func shopifyOrder(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/shopify_order.json")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func shopifyInput(tb testing.TB) *app.RuleInput {
	return &app.RuleInput{
		Source: "shop", Topic: "orders/paid", ID: "evt-1",
		Header: []app.HeaderField{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-Shopify-Shop-Domain", Value: "a.myshopify.com"},
			{Name: "X-Shopify-Topic", Value: "orders/paid"},
			{Name: "Authorization", Value: "Bearer s3cret-token"},
		},
		Body: shopifyOrder(tb),
	}
}

func mustFilter(tb testing.TB, expr string) app.Filter {
	tb.Helper()
	f, err := rules.NewFilter(expr)
	if err != nil {
		tb.Fatalf("NewFilter(%q): %v", expr, err)
	}
	return f
}

func TestFilter_Match(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{`body.financial_status == "paid" && double(body.total_price) >= 100.0`, true},
		{`double(body.total_price) >= 200.0`, false},
		{`headers["x-shopify-shop-domain"] == "a.myshopify.com"`, true},
		{`headers["X-Shopify-Shop-Domain"] == "a.myshopify.com"`, true}, // lookups ignore case
		{`"authorization" in headers`, false},                           // credentials are hidden
		{`topic == "orders/paid" && source == "shop" && id == "evt-1"`, true},
		{`body.id == 820982911946154508`, true},
		{`string(body.id) == "820982911946154508"`, true},
		{`body.customer.id == 115310627314723954`, true},
		{`body.id == 820982911946154508.0`, true}, // across int and double
		{`body.total_weight > 1000.5`, true},
		{`body.total_weight == 1200u`, true},
		{`body.line_items.exists(i, i.sku == "CASE-01" && i.quantity >= 2)`, true},
		{`body.line_items.size() == 2 && body.discount_codes.size() == 0`, true},
		{`has(body.customer) && !has(body.refunds)`, true},
		{`"vip" in body.tags.split(", ")`, true},
		{`body.note.startsWith("Please") && body.note.lowerAscii().contains("bell")`, true},
		{`body.cancelled_at == null && body.app_id == null`, true},
		{`body.?refunds.orValue([]).size() == 0`, true},
		{`body.billing_address.country_code in ["DE", "AT"]`, true},
		{`size(body) > 40`, true},
		{`body.customer == {"id": 115310627314723954, "email": "jon@example.com", "first_name": "Jon", "last_name": "Snow", "state": "enabled", "verified_email": true, "tags": "vip", "currency": "EUR", "default_address": {"city": "Bremen", "country_code": "DE"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			in := shopifyInput(t)
			got, err := mustFilter(t, tt.expr).Match(in)
			if err != nil {
				t.Fatalf("Match: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilter_ErrEval(t *testing.T) {
	tests := []struct {
		expr, body, want string
	}{
		{`body.amount > 1`, `{"a":1}`, "no such key: amount"},
		{`body.a.b == 1`, `{"a":1}`, "no such key"},
		{`body.a > 1`, `{"a":"x"}`, "no such overload"},
		{`body.a == 1`, `not json`, "no such key: a"},
		{`body.b == 1`, `{"a":1,"b":[tru]}`, "body: invalid JSON"},
		{`int(body.a) == 1`, `{"a":"abc"}`, "type conversion error"},
		{`body.items.all(x, body.items.all(y, body.items.all(z, x + y + z >= 0)))`,
			`{"items":[` + strings.Repeat("1,", 999) + `1]}`, "cost limit exceeded"},
		{`headers["authorization"] != ""`, `{}`, "no such key: authorization"},
		{`body.s.matches(body.re)`, `{"s": "x", "re": "` + strings.Repeat("(a|b)*c{1,100}", 300) + `"}`, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			in := &app.RuleInput{Body: []byte(tt.body), Header: []app.HeaderField{{Name: "Authorization", Value: "Bearer s3cret"}}}
			ok, err := mustFilter(t, tt.expr).Match(in)
			if ok || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Match = %v, %v; want false and an error with %q", ok, err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error carries a secret: %v", err)
			}
		})
	}
}

func TestBody_Shapes(t *testing.T) {
	tests := []struct {
		name, ctype, body, expr string
	}{
		{"Array", "", `[1, {"a": "x"}, [true]]`, `body[1].a == "x" && body[2][0] && size(body) == 3`},
		{"String", "", ` "héllo" `, `body == "héllo"`},
		{"Number", "", `12.5`, `body == 12.5`},
		{"Empty", "", ``, `body == null`},
		{"NotJSON", "", `{"a": 1`, `body == null`},
		{"TrailingGarbage", "", `{"a": 1} x`, `body == null`},
		{"Form", "application/x-www-form-urlencoded; charset=utf-8", `a=1&b=two+words&a=3`, `body.a == "1" && body.b == "two words"`},
		{"FormNotJSON", "application/x-www-form-urlencoded", `{"a":"1"}`, `!has(body.a)`},
		{"JSONWithoutType", "text/plain", `{"a":"1"}`, `body.a == "1"`},
		{"Escapes", "", `{"k\u00e9y": "a\"b\\c\u263a\ud83d\ude00", "n": -0.5e-3}`, `body["kéy"] == "a\"b\\c☺😀" && body.n == -0.0005`},
		{"InvalidUTF8", "", "{\"a\": \"x\xffy\"}", `body.a == "x\uFFFDy"`},
		{"BigUint", "", `{"a": 18446744073709551615}`, `body.a == 18446744073709551615u`},
		{"HugeInt", "", `{"a": 1` + strings.Repeat("0", 400) + `}`, `body.a > 1e300`},
		{"HugeExp", "", `{"a": 1e999}`, `body.a > 1e308`},
		{"Duplicates", "", `{"a": 1, "a": 2}`, `body.a == 2 && size(body) == 1`},
		{"DeepUnread", "", `{"a": 1, "deep": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, `body.a == 1`},
		{"Nested", "", `{"a": {"b": {"c": [1, {"d": true}]}}}`, `body.a.b.c[1].d == true`},
		{"MapKeys", "", `{"x": 1, "y": 2}`, `body.all(k, k in ["x", "y"]) && body.exists(k, body[k] == 2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &app.RuleInput{Body: []byte(tt.body)}
			if tt.ctype != "" {
				in.Header = []app.HeaderField{{Name: "content-type", Value: tt.ctype}}
			}
			ok, err := mustFilter(t, tt.expr).Match(in)
			if err != nil || !ok {
				t.Fatalf("Match = %v, %v", ok, err)
			}
		})
	}
	t.Run("ErrDeep", func(t *testing.T) {
		in := &app.RuleInput{Body: []byte(`{"deep": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`)}
		_, err := mustFilter(t, `size(body.deep) > 0`).Match(in)
		if err == nil || !strings.Contains(err.Error(), "nested deeper") {
			t.Fatalf("Match: %v", err)
		}
	})
}

// The body is parsed once per event, however many routes read it.
func TestFilter_ParsedOnce(t *testing.T) {
	in := shopifyInput(t)
	if _, err := mustFilter(t, `topic == "orders/paid"`).Match(in); err != nil {
		t.Fatal(err)
	}
	first := in.Parsed
	if first == nil {
		t.Fatal("Parsed not set")
	}
	for _, e := range []string{`body.id > 0`, `body.customer.id > 0`} {
		if _, err := mustFilter(t, e).Match(in); err != nil {
			t.Fatal(err)
		}
		if in.Parsed != first {
			t.Fatal("a second filter parsed the event again")
		}
	}
	// A copy of the input (another event) does not reuse its parse.
	other := *in
	other.Body = []byte(`{"id": 1}`)
	if ok, err := mustFilter(t, `body.id == 1`).Match(&other); err != nil || !ok {
		t.Fatalf("Match on a copied input = %v, %v", ok, err)
	}
}

func TestNewFilter_Err(t *testing.T) {
	tests := []struct{ expr, want string }{
		{``, "is empty"},
		{`body.x +`, "1:9: Syntax error"},
		{`bdy.x == 1`, "1:1: undeclared reference to 'bdy'"},
		{"true &&\n  nope", "2:3: undeclared reference to 'nope'"},
		{`body.x`, "must give a bool; this expression gives dyn"},
		{`"paid"`, "this expression gives string"},
		{`topic + 1 == 2`, "no matching overload"},
		{strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200), "recursion"},
		{strings.Repeat("a", 20000), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := rules.NewFilter(tt.expr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewFilter(%.40q) = %v, want %q", tt.expr, err, tt.want)
			}
		})
	}
}

func TestNewTransform_Err(t *testing.T) {
	for _, expr := range []string{`1 + 2`, `body.id > 1`, `b"x"`, `duration("1s")`} {
		if _, err := rules.NewTransform(expr); err == nil || !strings.Contains(err.Error(), "a transform must give a map or a list") {
			t.Errorf("NewTransform(%q) = %v", expr, err)
		}
	}
	for _, expr := range []string{`body`, `{"a": 1}`, `[1]`, `"x"`, `body.note`} {
		if _, err := rules.NewTransform(expr); err != nil {
			t.Errorf("NewTransform(%q): %v", expr, err)
		}
	}
}

func TestTransform_Apply(t *testing.T) {
	slack := `{"text": "Refund " + string(body.id) + ": " + body.total_price + " " + body.currency, "blocks": [{"n": body.line_items.size(), "ok": true, "x": null, "f": 1.5}]}`
	tests := []struct {
		name, expr, ctype, want string
	}{
		{"Slack", slack, rules.ContentTypeJSON, `{"blocks":[{"f":1.5,"n":2,"ok":true,"x":null}],"text":"Refund 820982911946154508: 199.00 EUR"}`},
		{"String", `"order " + body.name`, rules.ContentTypeText, `order #9999`},
		{"List", `body.line_items.map(i, i.sku)`, rules.ContentTypeJSON, `["IPOD2008PINK","CASE-01"]`},
		{"Passthrough", `{"customer": body.customer.default_address}`, rules.ContentTypeJSON, `{"customer":{"city":"Bremen","country_code":"DE"}}`},
		{"Escaping", `{"s": "a\"\n<\u2028" + "\x01"}`, rules.ContentTypeJSON, `{"s":"a\"\n<\u2028\u0001"}`},
		{"DynString", `body.note`, rules.ContentTypeText, `Please ring twice – the bell is broken`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := rules.NewTransform(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			body, ctype, err := tr.Apply(shopifyInput(t), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if ctype != tt.ctype || string(body) != tt.want {
				t.Fatalf("Apply = %s (%s)\nwant  %s (%s)", body, ctype, tt.want, tt.ctype)
			}
			if ctype == rules.ContentTypeJSON && !json.Valid(body) {
				t.Fatalf("not JSON: %s", body)
			}
		})
	}
	t.Run("WholeBody", func(t *testing.T) {
		tr, _ := rules.NewTransform(`body`)
		in := shopifyInput(t)
		out, _, err := tr.Apply(in, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(in.Body, &want)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("the body written back differs:\n%s\n%s", g, w)
		}
	})
	errs := []struct{ name, expr, body, want string }{
		{"ErrNoSuchKey", `{"text": body.amount}`, `{}`, "transform: no such key: amount"},
		{"ErrOver", `{"a": body.s + body.s}`, `{"s":"` + strings.Repeat("x", 600) + `"}`, "transform: body over 1000 bytes"},
		{"ErrOverString", `body.s + body.s`, `{"s":"` + strings.Repeat("x", 600) + `"}`, "transform: body over 1000 bytes"},
		{"ErrNotBody", `body.n`, `{"n": 1}`, "transform: gave int, not a map, list or string"},
		{"ErrInf", `{"a": body.n}`, `{"n": 1e999}`, "cannot be written as JSON"},
		{"ErrBrokenMember", `{"a": body.b}`, `{"b": [tru]}`, "invalid JSON"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := rules.NewTransform(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = tr.Apply(&app.RuleInput{Body: []byte(tt.body)}, 1000)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Apply: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFilter_String(t *testing.T) {
	e := `topic == "x"`
	if got := mustFilter(t, e).String(); got != e {
		t.Fatalf("String = %q", got)
	}
	tr, _ := rules.NewTransform(`"x"`)
	if tr.String() != `"x"` {
		t.Fatalf("String = %q", tr.String())
	}
}
