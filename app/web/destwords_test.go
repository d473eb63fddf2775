package web_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// GET /api/v1/destinations?status=WORD lists exactly the destinations
// whose state (the word the Destinations page shows) is WORD, and an
// unknown word is a 400 that names the valid ones. On the old main
// ?status= was ignored (every destination, 200).
func TestAPI_DestinationStatusWords(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill() // attempts to erp-warehouse-integration and crm failed, pos delivered
	list := func(query string) (int, map[string][]string, string) {
		t.Helper()
		code, b := f.get("/api/v1/destinations" + query)
		var out struct {
			Destinations []struct {
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"destinations"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v: %s", query, err, b)
		}
		got := map[string][]string{}
		for _, d := range out.Destinations {
			got[d.State] = append(got[d.State], d.Name)
		}
		return code, got, out.Error
	}
	check := func(want map[string][]string) {
		t.Helper()
		if _, all, _ := list(""); !equalLists(all, want) {
			t.Errorf("statuses %v; want %v", all, want)
		}
		for _, w := range app.DestinationStates {
			code, got, msg := list("?status=" + w)
			if code != 200 || len(got) > 1 || !slices.Equal(got[w], want[w]) {
				t.Errorf("?status=%s: %d %s, lists %v; want %v", w, code, msg, got, want[w])
			}
		}
	}
	check(map[string][]string{"delivering": {"pos"}, "failing": {"erp-warehouse-integration", "crm"}})

	if code, _ := f.post("/api/v1/destinations/pos/pause"); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	if err := f.db.HoldDestination(t.Context(), "crm", f.now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	check(map[string][]string{"paused": {"pos"}, "held": {"crm"}, "failing": {"erp-warehouse-integration"}})

	for _, bad := range []string{"up", "Paused", "dead"} {
		code, got, msg := list("?status=" + bad)
		if code != 400 || len(got) != 0 {
			t.Errorf("?status=%s: %d, lists %v; want 400", bad, code, got)
		}
		for _, w := range app.DestinationStates {
			if !strings.Contains(msg, w) {
				t.Errorf("?status=%s: the error %q does not name %s", bad, msg, w)
			}
		}
	}
}

// equalLists says a and b have the same lists under the same keys.
func equalLists(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
