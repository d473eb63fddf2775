package fields_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"hookbox/app/fields"
)

func TestTemplate_Render(t *testing.T) {
	h := http.Header{}
	h.Set("X-Shopify-Shop-Domain", "shop1.myshopify.com")
	body := []byte(`{"id": 820982911946154508, "customer": {"id": "c_1", "tags": ["a", "b"], "vip": true, "none": null}, "s": "<&>"}`)
	in := fields.Input{Body: body, Header: h, Source: "shop", Topic: "customers/update"}
	for _, tt := range []struct {
		tmpl, want string
	}{
		{"{header.X-Shopify-Shop-Domain}:{body.id}", "shop1.myshopify.com:820982911946154508"},
		{"{header.x-shopify-shop-domain}", "shop1.myshopify.com"},
		{"{body.customer.id}", "c_1"},
		{"{body.customer.tags.1}", "b"},
		{"{body.customer.vip}", "true"},
		{"{body.s}", "<&>"},
		{"{source}/{topic}", "shop/customers/update"},
		{"literal", "literal"},
	} {
		tm, err := fields.Parse(tt.tmpl)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.tmpl, err)
		}
		got, err := tm.Render(in)
		if err != nil || got != tt.want {
			t.Errorf("Render(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
}

func TestTemplate_Render_Missing(t *testing.T) {
	in := fields.Input{Body: []byte(`{"a": {"b": 1}, "n": null, "o": {}}`), Header: http.Header{}}
	for _, s := range []string{"{body.x}", "{body.a.b.c}", "{body.n}", "{body.o}", "{body.a}", "{header.X-None}", "{topic}", "{body.a.5}"} {
		tm, err := fields.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tm.Render(in); !errors.Is(err, fields.ErrMissing) {
			t.Errorf("Render(%q) = %q, %v; want ErrMissing", s, got, err)
		}
	}
	tm, _ := fields.Parse("{body.id}")
	if _, err := tm.Render(fields.Input{Body: []byte("webhook_id=3")}); !errors.Is(err, fields.ErrMissing) {
		t.Errorf("non-JSON body: err = %v, want ErrMissing", err)
	}
}

func TestParse_Errors(t *testing.T) {
	for _, s := range []string{"", "{", "}", "a}b", "{body.}", "{body.a..b}", "{header.}", "{nope}", "{header.a b}", "x{source"} {
		if _, err := fields.Parse(s); err == nil {
			t.Errorf("Parse(%q): no error", s)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	f.Add("{header.X-A}:{body.a.b}", []byte(`{"a":{"b":"c"}}`))
	f.Add("{body.0}", []byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, tmpl string, body []byte) {
		tm, err := fields.Parse(tmpl)
		if err != nil {
			return
		}
		h := http.Header{}
		h.Set("X-A", "v")
		out, err := tm.Render(fields.Input{Body: body, Header: h, Source: "s", Topic: "t"})
		if err == nil && len(out) > 512 {
			t.Fatalf("rendered %d bytes, over the bound", len(out))
		}
	})
}

// Headers lists the headers a template reads, in order, as sign and bench
// fill them; a nil template reads none.
func TestTemplate_Headers(t *testing.T) {
	tpl, err := fields.Parse("{header.X-Shop}:{body.id}:{header.X-Id}-{source}")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tpl.Headers(), ","), "X-Shop,X-Id"; got != want {
		t.Errorf("Headers() = %q, want %q", got, want)
	}
	var none *fields.Template
	if got := none.Headers(); got != nil {
		t.Errorf("nil template: Headers() = %v", got)
	}
}
