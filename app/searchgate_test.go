package app_test

import (
	"testing"

	"hookbox/app"
)

func TestSearchGate_Enter(t *testing.T) {
	g := app.NewSearchGate(3, 2)
	enter := func(caller string) func() {
		t.Helper()
		leave, err := g.Enter(caller)
		if err != nil {
			t.Fatalf("Enter(%s) = %v; want a place", caller, err)
		}
		return leave
	}
	refused := func(caller string) {
		t.Helper()
		if _, err := g.Enter(caller); app.ErrorCode(err) != app.EBUSY {
			t.Fatalf("Enter(%s) = %v; want %s", caller, err, app.EBUSY)
		}
	}
	a1, a2 := enter("alice"), enter("alice")
	refused("alice") // her two at once
	b1 := enter("bob")
	refused("carol") // the node's three
	a1()
	a1() // once only: it gives back one place
	c1 := enter("carol")
	refused("alice") // the node's three again
	a2()
	b1()
	c1()
	enter("bob")
	enter("bob")
	enter("alice")
}

func TestDefaultSearches(t *testing.T) {
	if n := app.DefaultSearches(); n < 1 {
		t.Fatalf("DefaultSearches = %d; want at least 1", n)
	}
}
