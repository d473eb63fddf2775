package app_test

import (
	"sync"
	"testing"
	"time"

	"hookbox/app"
)

// The throttle lets n lines through per window, holds back the rest, and
// hands the count held back to the first line of a later window.
func TestThrottle_AllowN(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	type call struct {
		at       time.Duration // after t0
		ok       bool
		wantHeld uint64
	}
	for _, tc := range []struct {
		name  string
		every time.Duration
		n     int
		calls []call
	}{
		{"OneFirstPasses", time.Minute, 1, []call{{0, true, 0}}},
		{"OneHeldInsideWindow", time.Minute, 1, []call{
			{0, true, 0}, {time.Second, false, 0}, {59 * time.Second, false, 0},
			{time.Minute, true, 2}, {time.Minute + time.Second, false, 0},
		}},
		// The window opens at the line let through, not at a round time.
		{"OneWindowFromLastLine", time.Minute, 1, []call{
			{30 * time.Second, true, 0}, {time.Minute, false, 0},
			{90*time.Second - 1, false, 0}, {90 * time.Second, true, 2},
		}},
		{"OneQuietGapNoHeld", time.Minute, 1, []call{{0, true, 0}, {time.Hour, true, 0}}},
		{"ClockBackHeld", time.Minute, 1, []call{{time.Minute, true, 0}, {0, false, 0}, {2 * time.Minute, true, 1}}},
		{"ThreeASecond", time.Second, 3, []call{
			{0, true, 0}, {1, true, 0}, {2, true, 0}, {3, false, 0}, {999 * time.Millisecond, false, 0},
			{time.Second, true, 2}, {time.Second + 1, true, 0}, {time.Second + 2, true, 0}, {time.Second + 3, false, 0},
			{5 * time.Second, true, 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var th app.Throttle
			for i, c := range tc.calls {
				ok, held := th.AllowN(t0.Add(c.at), tc.every, tc.n)
				if ok != c.ok || held != c.wantHeld {
					t.Errorf("call %d at +%v: (%v, %d); want (%v, %d)", i, c.at, ok, held, c.ok, c.wantHeld)
				}
			}
		})
	}
}

// Allow is AllowN with one line a window.
func TestThrottle_Allow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	var th app.Throttle
	if ok, _ := th.Allow(t0, 10*time.Second); !ok {
		t.Fatal("first line held")
	}
	if ok, _ := th.Allow(t0.Add(9*time.Second), 10*time.Second); ok {
		t.Fatal("second line inside the window let through")
	}
	if ok, held := th.Allow(t0.Add(10*time.Second), 10*time.Second); !ok || held != 1 {
		t.Fatalf("after the window: (%v, %d); want (true, 1)", ok, held)
	}
}

// Under concurrent callers at one instant exactly n get through and the
// rest are counted.
func TestThrottle_Concurrent(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	var th app.Throttle
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := th.AllowN(t0, time.Second, 5); ok {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if passed != 5 {
		t.Errorf("%d passed; want 5", passed)
	}
	if ok, held := th.AllowN(t0.Add(time.Second), time.Second, 5); !ok || held != 95 {
		t.Errorf("next window: (%v, %d); want (true, 95)", ok, held)
	}
}
