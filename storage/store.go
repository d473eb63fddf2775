// Package storage holds what hookbox's stores share and no store owns: the
// errors they answer alike. The interface they implement is the domain's
// (app.Store, the sum of the roles in app/stores.go); Store names it here
// for the stores' tests and storetest. It imports no storage technology.
package storage

import (
	"errors"

	"hookbox/app"
)

// Store is app.Store: everything a store of hookbox implements.
// bboltstore.DB and postgres.DB implement it, and storetest.Run holds the
// behaviour both must show.
type Store = app.Store

// ErrClosed is returned by a store's writes after Close.
var ErrClosed = errors.New("storage closed")
