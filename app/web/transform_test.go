package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// slackTransform stands for a CEL transform (app/rules compiles those):
// a Slack message of a refund, failing on a missing field as CEL does,
// and quoting the X-Shop-Token header when asked, as a careless transform
// may.
type slackTransform struct{}

func (slackTransform) String() string { return `{"text": "Refund " + string(body.id) + …}` }
func (slackTransform) Apply(in *app.RuleInput, _ int) ([]byte, string, error) {
	var b map[string]any
	if err := json.Unmarshal(in.Body, &b); err != nil {
		return nil, "", err
	}
	if _, ok := b["amount"]; !ok {
		return nil, "", fmt.Errorf("no such key: amount")
	}
	text := fmt.Sprintf("Refund %v: %v", b["id"], b["amount"])
	if b["quote_token"] == true {
		for _, f := range in.Header {
			if f.Name == "X-Shop-Token" {
				text += " " + f.Value
			}
		}
	}
	out, err := json.Marshal(map[string]string{"text": text})
	return out, "application/json", err
}

// routedReads is the bbolt store with each delivery it reads naming its
// route, as the stores are about to record it (until then they give ""):
// the first route in config order that takes the event and names the
// destination.
type routedReads struct {
	*bboltstore.DB
	cfg *app.Config
}

func (r *routedReads) route(ctx context.Context, d *app.Delivery) {
	if d == nil || d.Route != "" {
		return
	}
	e, err := r.DB.Event(ctx, d.EventSeq)
	if err != nil || e == nil {
		return
	}
	for _, x := range r.cfg.DestinationsFor(e.Source, e.Topic) {
		if x.Dest == d.Destination {
			d.Route = x.Route
		}
	}
}

func (r *routedReads) EventDeliveries(ctx context.Context, seq uint64) ([]*app.Delivery, error) {
	ds, err := r.DB.EventDeliveries(ctx, seq)
	for _, d := range ds {
		r.route(ctx, d)
	}
	return ds, err
}

func (r *routedReads) Delivery(ctx context.Context, id uint64) (*app.Delivery, []*app.Attempt, error) {
	d, as, err := r.DB.Delivery(ctx, id)
	r.route(ctx, d)
	return d, as, err
}

const transformPageConfig = `
[status]
user = "ops"
password = "pw-1234"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
[[destination]]
name = "slack"
url = "http://127.0.0.1:1/slack"
[[destination]]
name = "app"
url = "http://127.0.0.1:1/app"
[[route]]
name = "refunds-slack"
source = "shop"
topics = ["refunds/*"]
to = ["slack"]
[[route]]
name = "all"
source = "shop"
to = ["app"]
`

// The event page shows, for a delivery whose route has a transform, the
// body that transform (as configured now) makes, or why it makes none,
// beside the event's body as received; a value of a secret-looking
// header that the transform copied into its body is masked there as in
// the header table. The API's delivery names its route and says it is
// transformed.
func TestEventPage_TransformedDelivery(t *testing.T) {
	cfg := mustConfig(t, transformPageConfig)
	cfg.Routes[0].Transform = slackTransform{}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	login := testAccess(t, cfg, db)
	srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: &routedReads{DB: db, cfg: cfg}, Health: db.Ping, Access: login})
	f := &fixture{t: t, db: db, base: "http://" + serve(t, srv.App())}
	const token = "shptka_0123456789abcdef"
	receive := func(id, body string) uint64 {
		t.Helper()
		h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("s3cret-shop")}}, []byte(body), "", id, "refunds/create", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		h.Set("X-Shop-Token", token)
		req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(body))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("send %s: %v, %v", id, resp, err)
		}
		resp.Body.Close()
		_, seq, _, _ := db.LookupID(context.Background(), "shop", id)
		return seq
	}
	good := receive("refund-1", `{"id": 812, "amount": "12.50", "quote_token": true}`)
	bad := receive("refund-2", `{"id": 813}`)

	code, page := f.get(fmt.Sprintf("/events/%d", good))
	text := html.UnescapeString(string(page))
	if code != 200 {
		t.Fatalf("event page: %d", code)
	}
	for _, want := range []string{"route refunds-slack", "route all", "Transformed: the route refunds-slack's transform, as configured now, makes this body (Content-Type: application/json)",
		`"text": "Refund 812: 12.50 ••••"`, `"amount": "12.50"`, "The event's body as received"} {
		if !strings.Contains(stripTags(text), want) {
			t.Errorf("event page lacks %q", want)
		}
	}
	if strings.Count(text, "Transformed:") != 1 {
		t.Errorf("event page: %d transformed deliveries shown; want only slack's", strings.Count(text, "Transformed:"))
	}
	if strings.Contains(text, token) {
		t.Errorf("event page shows the X-Shop-Token value the transform copied")
	}
	_, page = f.get(fmt.Sprintf("/events/%d", bad))
	if text := stripTags(html.UnescapeString(string(page))); !strings.Contains(text, "makes no body, so the delivery goes dead at once:") ||
		!strings.Contains(text, "transform: no such key: amount") {
		t.Errorf("event page of a failing transform lacks its reason:\n%s", text)
	}

	ds, err := db.EventDeliveries(context.Background(), good)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries %v, %v", ds, err)
	}
	for _, d := range ds {
		_, body := f.get(fmt.Sprintf("/api/v1/deliveries/%d", d.ID))
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		route, transformed := map[string]string{"slack": "refunds-slack", "app": "all"}[d.Destination], d.Destination == "slack"
		if got["route"] != route || (got["transformed"] == true) != transformed || !transformed && got["transformed"] != nil {
			t.Errorf("delivery to %s: route %v, transformed %v; want %q, %v", d.Destination, got["route"], got["transformed"], route, transformed)
		}
	}
}

// stripTags is the text of an HTML page, its tags dropped.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
