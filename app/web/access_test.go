package web_test

import (
	"context"
	"log/slog"
	"testing"

	"hookbox/app"
	"hookbox/app/access"
)

// testAccess is the Access of a test server over db: the store's users and
// tokens when db keeps them (the first admin made as serve does), else
// only the config's [status] user and password.
func testAccess(tb testing.TB, cfg *app.Config, db any) *access.Service {
	tb.Helper()
	store, ok := db.(app.AccessStore)
	if !ok {
		return access.Fixed(cfg.Status.User, cfg.Status.Password)
	}
	audit, _ := db.(app.AuditStore)
	a, err := access.New(context.Background(), cfg.Status, store, audit, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.Ensure(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return a
}
