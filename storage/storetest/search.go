package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// SearchBudgeter is a store whose body search stops at a budget (bbolt):
// the suite sets a small one to see the page say how far it looked.
type SearchBudgeter interface {
	SetSearchBudget(app.SearchBudget)
}

// searchBodies are the bodies of the search test's events, by index; the
// others are plain orders. Every body has "Buyer<i>@Example.com".
var searchBodies = map[int]string{
	3:  `{"name":"#1003","email":"Buyer3@Example.com","note":"Gift WRAP please"}`,
	5:  "\xff\xfe{\"email\":\"Buyer5@Example.com\",\"note\":\"gIFT wrap\"}\x00", // not UTF-8
	7:  `{"name":"#1007","email":"Buyer7@Example.com","note":"gift wrap"}`,
	9:  `{"name":"#1009","email":"Buyer9@Example.com","note":"café"}`,
	10: `{"name":"#1010","email":"Buyer10@Example.com","note":"100% _real_ C:\path"}`,
}

// storeSearchModel accepts 12 events a minute apart from T0 (source pay
// for every third, else shop; topic refunds/create for odd ones, else
// orders/create), each with a delivery to pos: event 3's delivered,
// 5's and 7's dead, the others pending. It returns their seqs by index.
func storeSearchModel(t *testing.T, s storage.Store) []uint64 {
	t.Helper()
	var seqs []uint64
	for i := range 12 {
		src, topic := "shop", "orders/create"
		if i%3 == 2 {
			src = "pay"
		}
		if i%2 == 1 {
			topic = "refunds/create"
		}
		at := T0.Add(time.Duration(i) * time.Minute)
		e := NewEvent(src, fmt.Sprintf("wh-%d", 1000+i), at)
		e.Topic = topic
		e.Body = fmt.Appendf(nil, `{"name":"#%d","email":"Buyer%d@Example.com"}`, 1000+i, i)
		if b, ok := searchBodies[i]; ok {
			e.Body = []byte(b)
		}
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
		d := deliveries(t, s, e.Seq, 1)[0]
		switch i {
		case 3:
			record(t, s, d.ID, &app.Attempt{Start: at, Status: 200}, app.Delivered, time.Time{})
		case 5, 7:
			record(t, s, d.ID, &app.Attempt{Start: at, Status: 500, Error: "HTTP 500"}, app.Dead, time.Time{})
		}
		seqs = append(seqs, e.Seq)
	}
	return seqs
}

// Search: a body search finds the events whose body has the text, ASCII
// letters in either case and every other byte as it is (bodies that are
// not UTF-8 too; % _ \ are plain characters), newest first, with every
// other filter of the list; it refuses fewer than three characters; it
// pages with the list's cursor; ListEvents given q searches alike; a
// store with a budget (bbolt) says where it stopped, and its cursor goes
// on from there; replay by query takes the same text.
func testSearch(t *testing.T, open Opener) {
	s := open(t)
	seqs := storeSearchModel(t, s)
	at := func(i int) time.Time { return T0.Add(time.Duration(i) * time.Minute) }
	idx := func(rows []app.EventSummary) []int {
		out := []int{}
		for _, r := range rows {
			out = append(out, slices.Index(seqs, r.Seq))
		}
		return out
	}
	for _, tt := range []struct {
		name string
		q    app.EventQuery
		want []int
	}{
		{"CaseInsensitive", app.EventQuery{Q: "GIFT wrap"}, []int{7, 5, 3}},
		{"OrderNumber", app.EventQuery{Q: "#1004"}, []int{4}},
		{"NotUTF8Body", app.EventQuery{Q: "\xff\xfe{"}, []int{5}},
		{"UTF8AsIs", app.EventQuery{Q: "café"}, []int{9}},
		{"NonASCIINotFolded", app.EventQuery{Q: "CAFÉ"}, nil},
		{"NoEscapeArtifacts", app.EventQuery{Q: "303"}, nil}, // é is \303\251 in PostgreSQL's escape encoding
		{"PercentUnderscore", app.EventQuery{Q: "0% _"}, []int{10}},
		{"Backslash", app.EventQuery{Q: `C:\PATH`}, []int{10}},
		{"NoMatch", app.EventQuery{Q: "#2000"}, nil},
		{"Source", app.EventQuery{Q: "gift wrap", Source: "shop"}, []int{7, 3}},
		{"Topic", app.EventQuery{Q: "gift wrap", Topic: "orders/*"}, nil},
		{"TopicRefunds", app.EventQuery{Q: "gift wrap", Topic: "refunds/*"}, []int{7, 5, 3}},
		{"Status", app.EventQuery{Q: "gift wrap", Status: "dead"}, []int{7, 5}},
		{"Since", app.EventQuery{Q: "gift wrap", Since: at(4)}, []int{7, 5}},
		{"Until", app.EventQuery{Q: "gift wrap", Until: at(6)}, []int{5, 3}},
		{"SinceUntil", app.EventQuery{Q: "buyer", Since: at(2), Until: at(4)}, []int{4, 3, 2}},
		{"ID", app.EventQuery{Q: "gift wrap", ID: "wh-1003"}, []int{3}},
		{"IDNoMatch", app.EventQuery{Q: "gift wrap", ID: "wh-1004"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.Limit = 50
			res, err := s.SearchEvents(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := idx(res.Rows); !slices.Equal(got, append([]int{}, tt.want...)) {
				t.Fatalf("SearchEvents(%+v) = events %v, want %v", tt.q, got, tt.want)
			}
			if res.Next != 0 || !res.SearchedUntil.IsZero() {
				t.Fatalf("SearchEvents(%+v): next %d, searched until %v; want 0 and zero (all searched)", tt.q, res.Next, res.SearchedUntil)
			}
			rows, next, err := s.ListEvents(ctx, tt.q)
			if err != nil || next != 0 || !slices.Equal(idx(rows), idx(res.Rows)) {
				t.Fatalf("ListEvents(%+v) = %v, %d, %v; want SearchEvents' %v", tt.q, idx(rows), next, err, idx(res.Rows))
			}
		})
	}
	t.Run("Row", func(t *testing.T) {
		res, err := s.SearchEvents(ctx, app.EventQuery{Q: "#1007"})
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("SearchEvents(#1007) = %+v, %v", res, err)
		}
		if r := res.Rows[0]; r.Seq != seqs[7] || r.Source != "shop" || r.ID != "wh-1007" || r.Topic != "refunds/create" || r.Status != "dead" ||
			r.Size != len(searchBodies[7]) || !r.ReceivedAt.Equal(at(7)) {
			t.Fatalf("row = %+v", r)
		}
	})
	t.Run("MinLength", func(t *testing.T) {
		for _, q := range []string{"ab", "é", "  "} {
			if _, err := s.SearchEvents(ctx, app.EventQuery{Q: q}); app.ErrorCode(err) != app.EINVALID {
				t.Errorf("SearchEvents(%q) error = %v, want %s", q, err, app.EINVALID)
			}
			if _, _, err := s.ListEvents(ctx, app.EventQuery{Q: q}); app.ErrorCode(err) != app.EINVALID {
				t.Errorf("ListEvents(%q) error = %v, want %s", q, err, app.EINVALID)
			}
			if _, err := replayQuery(ctx, s, app.ReplayQuery{Q: q, Status: app.ReplayAny, DryRun: true}, T0); app.ErrorCode(err) != app.EINVALID {
				t.Errorf("ReplayQuery(%q) error = %v, want %s", q, err, app.EINVALID)
			}
		}
	})
	t.Run("NewestFirstPaged", func(t *testing.T) {
		var got []int
		q := app.EventQuery{Q: "@EXAMPLE.com", Limit: 5}
		for pages := 1; ; pages++ {
			res, err := s.SearchEvents(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, idx(res.Rows)...)
			if res.Next == 0 {
				break
			}
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			q.Before = res.Next
		}
		if want := []int{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}; !slices.Equal(got, want) {
			t.Fatalf("paged %v, want %v", got, want)
		}
	})
	if b, ok := s.(SearchBudgeter); ok {
		t.Run("Budget", func(t *testing.T) { testSearchBudget(t, s, b, seqs) })
	}
	t.Run("Replay", func(t *testing.T) {
		names := func(res app.ReplayResult) []string {
			var out []string
			for _, it := range res.First {
				out = append(out, it.Event.ID)
			}
			return out
		}
		for _, tt := range []struct {
			q         app.ReplayQuery
			want      []string
			delivered int
		}{
			{app.ReplayQuery{Q: "GIFT WRAP"}, []string{"wh-1003", "wh-1005", "wh-1007"}, 1},
			{app.ReplayQuery{Q: "gift wrap", Status: app.ReplayDead}, []string{"wh-1005", "wh-1007"}, 0},
			{app.ReplayQuery{Q: "gift wrap", Source: "shop"}, []string{"wh-1003", "wh-1007"}, 1},
			{app.ReplayQuery{Q: "gift wrap", Since: at(4)}, []string{"wh-1005", "wh-1007"}, 0},
			{app.ReplayQuery{Q: "303"}, nil, 0},
			{app.ReplayQuery{Q: "#1004"}, nil, 0}, // pending: on its way already
		} {
			tt.q.DryRun = true
			res, err := replayQuery(ctx, s, tt.q, T0)
			if err != nil || !slices.Equal(names(res), tt.want) || res.Matched != len(tt.want) || res.Delivered != tt.delivered || res.Replayed != 0 {
				t.Errorf("dry ReplayQuery(%+v) = %v (%+v), %v; want %v, %d delivered", tt.q, names(res), res, err, tt.want, tt.delivered)
			}
		}
		res, err := replayQuery(ctx, s, app.ReplayQuery{Q: "gift WRAP", Status: app.ReplayDead}, T0.Add(time.Hour))
		if err != nil || res.Replayed != 2 || !slices.Equal(names(res), []string{"wh-1005", "wh-1007"}) {
			t.Fatalf("ReplayQuery(gift WRAP, dead) = %+v, %v; want wh-1005 and wh-1007 replayed", res, err)
		}
		for _, i := range []int{5, 7} {
			if d := deliveries(t, s, seqs[i], 1)[0]; d.State != app.Pending || !d.Due.Equal(T0.Add(time.Hour)) {
				t.Errorf("event %d's delivery after the replay = %v due %v; want pending, due at the replay", i, d.State, d.Due)
			}
		}
	})
}

// testSearchBudget: a search that stops at its budget says the received
// time of the oldest event it examined and how many it examined, and its
// cursor goes on from the next one, until it has looked at every event.
func testSearchBudget(t *testing.T, s storage.Store, b SearchBudgeter, seqs []uint64) {
	b.SetSearchBudget(app.SearchBudget{Events: 4, Time: time.Hour})
	defer b.SetSearchBudget(app.SearchBudget{})
	at := func(i int) time.Time { return T0.Add(time.Duration(i) * time.Minute) }
	type page struct {
		rows     []uint64
		until    time.Time
		searched int
	}
	var got []page
	q := app.EventQuery{Q: "gift wrap"}
	for range 5 {
		res, err := s.SearchEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		p := page{until: res.SearchedUntil, searched: res.Searched}
		for _, r := range res.Rows {
			p.rows = append(p.rows, r.Seq)
		}
		got = append(got, p)
		if res.Next == 0 {
			break
		}
		q.Before = res.Next
	}
	want := []page{
		{nil, at(8), 4},
		{[]uint64{seqs[7], seqs[5]}, at(4), 4},
		{[]uint64{seqs[3]}, time.Time{}, 4},
	}
	if len(got) != len(want) {
		t.Fatalf("pages %+v, want %+v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i].rows, want[i].rows) || !got[i].until.Equal(want[i].until) || got[i].searched != want[i].searched {
			t.Fatalf("page %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Since ends the search before the budget does: all searched.
	res, err := s.SearchEvents(ctx, app.EventQuery{Q: "gift wrap", Since: at(9)})
	if err != nil || len(res.Rows) != 0 || res.Next != 0 || !res.SearchedUntil.IsZero() {
		t.Fatalf("SearchEvents since the 9th = %+v, %v; want nothing, all searched", res, err)
	}
}
