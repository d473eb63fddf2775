package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// nestedBody is the red-team body of issue 24: a JSON document of about
// 504 KB whose arrays nest 2,000 deep, 126 times over. Indented without a
// bound it becomes a page of about 1 GB.
func nestedBody() []byte {
	elem := strings.Repeat("[", 2000) + strings.Repeat("]", 2000)
	parts := make([]string, 126)
	for i := range parts {
		parts[i] = elem
	}
	return []byte(`{"deep":[` + strings.Join(parts, ",") + `]}`)
}

// countingPrefix counts what it is given and keeps the first max bytes.
type countingPrefix struct {
	n    int64
	max  int
	head bytes.Buffer
}

func (w *countingPrefix) Write(b []byte) (int, error) {
	w.n += int64(len(b))
	if room := w.max - w.head.Len(); room > 0 {
		w.head.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}

// A genuine webhook whose body nests 2,000 deep (issue 24, finding 3): its
// event page stays under 2 MB and costs hookbox at most 50 MB more peak
// memory, renders in little time while genuine webhooks keep being
// answered, and the body's download gives the stored bytes exactly.
func TestHostile_NestedBodyPage(t *testing.T) {
	const (
		maxPage = 2 << 20
		maxGrow = 50 << 20
		maxTime = 5 * time.Second // milliseconds on an idle machine; CI's is shared
	)
	h := startHostile(t)
	body := nestedBody()
	c := clientFrom("127.0.0.1", 2)
	c.Timeout = 120 * time.Second
	resp, raw, err := exchange(c, "POST", "http://"+h.addr+"/in/gh", body, header(githubHeaders(body, e2eSecret, "nested-1")))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST the nested body (%d bytes): %v %v %s", len(body), err, resp, raw)
	}
	auth := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+h.password))}}
	resp, raw, err = exchange(c, "GET", "http://"+h.addr+"/api/v1/events?source=gh", nil, auth)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("list events: %v %v %s", err, resp, raw)
	}
	var list struct {
		Items []struct {
			Seq uint64 `json:"seq"`
			ID  string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Items) != 1 || list.Items[0].ID != "nested-1" {
		t.Fatalf("events: %v %s", err, raw)
	}
	seq := strconv.FormatUint(list.Items[0].Seq, 10)
	before := h.peakRSS(t)

	// Genuine webhooks from another address while the page renders.
	done := make(chan struct{})
	var (
		wg        sync.WaitGroup
		latencies []time.Duration
		failed    int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		gc := clientFrom("127.0.0.2", 1)
		for i := 0; ; i++ {
			select {
			case <-done:
				if i >= 50 {
					return
				}
			default:
			}
			b := []byte(`{"ref":"refs/heads/main","n":` + strconv.Itoa(i) + `}`)
			start := time.Now()
			resp, _, err := exchange(gc, "POST", "http://"+h.addr+"/in/gh", b, header(githubHeaders(b, e2eSecret, fmt.Sprintf("genuine-%d", i))))
			latencies = append(latencies, time.Since(start))
			if err != nil || resp.StatusCode != 200 {
				failed++
			}
		}
	}()

	start := time.Now()
	req, _ := http.NewRequest("GET", "http://"+h.addr+"/events/"+seq, nil)
	req.Header = auth.Clone()
	page := &countingPrefix{max: maxPage + 1}
	resp, err = c.Do(req)
	if err == nil {
		_, err = io.Copy(page, resp.Body)
		resp.Body.Close()
	}
	took := time.Since(start)
	close(done)
	wg.Wait()
	peak := h.peakRSS(t)
	slices.Sort(latencies)
	p99 := latencies[len(latencies)*99/100]
	t.Logf("event page of a %d-byte body nested 2,000 deep: %d bytes in %v; peak RSS %.1f MiB → %.1f MiB (+%.1f MiB); "+
		"genuine webhooks meanwhile: %d, p99 %v, %d failed",
		len(body), page.n, took.Round(time.Millisecond), float64(before)/(1<<20), float64(peak)/(1<<20), float64(peak-before)/(1<<20),
		len(latencies), p99.Round(100*time.Microsecond), failed)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /events/%s: %v %v", seq, err, resp)
	}
	if page.n > maxPage {
		t.Errorf("page of %d bytes; want at most %d", page.n, maxPage)
	}
	if took > maxTime {
		t.Errorf("page took %v; want under %v", took, maxTime)
	}
	if peak-before > maxGrow {
		t.Errorf("peak RSS grew by %d MiB; want at most %d MiB", (peak-before)>>20, maxGrow>>20)
	}
	if failed > 0 {
		t.Errorf("%d genuine webhooks failed while the page rendered", failed)
	}
	link := "/api/v1/events/" + seq + "/body"
	if !bytes.Contains(page.head.Bytes(), []byte(`href="`+link+`"`)) {
		t.Errorf("the page has no download link %q", link)
	}

	resp, raw, err = exchange(c, "GET", "http://"+h.addr+link, nil, auth)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", link, err, resp)
	}
	if !bytes.Equal(raw, body) {
		t.Errorf("download: %d bytes, not the %d bytes sent", len(raw), len(body))
	}
	for k, want := range map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("download %s %q; want %q", k, got, want)
		}
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
		t.Errorf("download Content-Disposition %q; want an attachment", cd)
	}
	h.survived(t)
}
