package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
)

// testJobLock: a job's lock is held by one caller at a time, by name;
// given back, it can be taken again; of many callers at once, one wins.
func testJobLock(t *testing.T, open Opener) {
	s := open(t)
	take := func(name string, want bool) func() {
		t.Helper()
		release, ok, err := s.TryJobLock(ctx, name)
		if err != nil || ok != want || (release != nil) != want {
			t.Fatalf("TryJobLock(%s) = %v, %v (release %v); want %v", name, ok, err, release != nil, want)
		}
		return release
	}
	a := take("upstream/shop", true)
	take("upstream/shop", false)
	b := take("upstream/stripe", true)
	a()
	a() // twice is harmless
	a2 := take("upstream/shop", true)
	take("upstream/stripe", false)
	a2()
	b()

	var won atomic.Int32
	var wg sync.WaitGroup
	release := make(chan func(), 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, ok, err := s.TryJobLock(ctx, "upstream/race")
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				won.Add(1)
				release <- r
			}
		}()
	}
	wg.Wait()
	if n := won.Load(); n != 1 {
		t.Errorf("%d of 8 callers at once took the lock; want 1", n)
	}
	close(release)
	for r := range release {
		r()
	}
	take("upstream/race", true)()
}
