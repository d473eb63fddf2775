package upstream_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
)

func githubSource(apiURL string) string {
	return fmt.Sprintf(`
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"

[source.upstream]
api_key_env = "API_KEY"
endpoint = "repos/acme/shop/hooks/7"
api_url = %q
repair = true

[[route]]
to = ["erp"]
source = "gh"
`, apiURL)
}

// A GitHub hook set inactive, with failed deliveries among many: a check
// turns it on again, and asks GitHub once to deliver again each failed
// delivery of the window that hookbox does not hold and that no later
// delivery delivered; GitHub re-sends them signed, with the same
// X-GitHub-Delivery, and they are accepted once. A second check asks
// nothing.
func TestChecker_GitHubRedeliversWhatFailed(t *testing.T) {
	gh := newFakeGitHub(t, apiKey)
	r := newRig(t, githubSource(gh.URL))
	body := func(guid string) string { return fmt.Sprintf(`{"ref":"refs/heads/main","after":%q}`, guid) }
	var ds []ghDelivery
	add := func(guid string, status int, ago time.Duration, redelivery bool) {
		gh.nextID++
		ds = append(ds, ghDelivery{ID: gh.nextID, GUID: guid, At: r.now.Add(-ago), Status: status, Redelivery: redelivery, Event: "push", Body: body(guid)})
	}
	for i := range 150 { // two pages of 100
		add(fmt.Sprintf("ok-%03d", i), 200, time.Duration(i)*time.Minute+30*time.Second, false)
	}
	add("lost-a", 502, 2*time.Hour, false)                                       // hookbox was down
	add("fixed-b", 200, 3*time.Hour, true)                                       // a redelivery that worked
	add("fixed-b", 503, 4*time.Hour, false)                                      //
	add("held-c", 0, 5*time.Hour, false)                                         // GitHub timed out, but hookbox took it
	add("lost-e", 500, 6*time.Hour, true)                                        // failed twice: asked once
	add("lost-e", 500, 7*time.Hour, false)                                       //
	add("ancient-f", 500, 100*time.Hour, false)                                  // older than backfill (72h)
	slices.SortFunc(ds, func(a, b ghDelivery) int { return b.At.Compare(a.At) }) // newest first
	gh.deliveries = ds
	in := apptest.Signed(t, "github", "gh-secret", []byte(body("held-c")), "/in/gh", "held-c", "push", r.now)
	if res, err := r.recv.Receive(ctx, "gh", in); err != nil || res.Outcome != app.Accepted {
		t.Fatalf("held-c: %+v, %v", res, err)
	}
	gh.redeliver = func(d ghDelivery) int {
		in := apptest.Signed(t, "github", "gh-secret", []byte(d.Body), "/in/gh", d.GUID, d.Event, r.now)
		res, err := r.recv.Receive(ctx, "gh", in)
		if err != nil {
			t.Errorf("redelivery of %s: %v", d.GUID, err)
			return 500
		}
		if res.Outcome != app.Accepted {
			t.Errorf("redelivery of %s: %s; want accepted", d.GUID, res.Outcome)
		}
		return 200
	}

	res := r.check("gh")
	if res.Subscription != "enabled" || !res.Repaired || gh.patches != 1 || !gh.active {
		t.Errorf("check = %+v, patches %d; want the hook turned on once", res, gh.patches)
	}
	if res.Redelivered != 2 || res.Held != 1 || res.Seen != 154 || res.Error != "" {
		t.Errorf("check = %+v; want 2 redelivered, 1 held, 154 guids seen", res)
	}
	slices.Sort(gh.asked)
	if want := []string{"lost-a", "lost-e"}; !slices.Equal(gh.asked, want) {
		t.Errorf("asked again for %v; want %v", gh.asked, want)
	}
	for _, guid := range []string{"lost-a", "lost-e", "held-c"} {
		if e := r.event("gh", guid); e.Origin != "" || e.Topic != "push" {
			t.Errorf("%s = %+v; want a webhook (GitHub sent it again, signed)", guid, e)
		}
	}
	if len(r.alerts) != 1 || r.alerts[0].Kind != app.AlertSubscriptionDisabled || !strings.Contains(r.alerts[0].Text, "GitHub hook repos/acme/shop/hooks/7") {
		t.Errorf("alerts = %+v; want one subscription_disabled", r.alerts)
	}

	again := r.check("gh")
	if again.Redelivered != 0 || len(gh.asked) != 2 || again.Error != "" {
		t.Errorf("second check = %+v, asked %v; want nothing asked again", again, gh.asked)
	}
	if ids, events, _ := r.store.Counts(ctx); ids != 3 || events != 3 {
		t.Errorf("store holds %d ids, %d events; want 3: each once", ids, events)
	}
}
