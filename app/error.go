package app

import (
	"errors"
	"fmt"
)

// Error codes a caller can act on; the HTTP layer maps each to one status.
const (
	ENOTFOUND     = "not_found"    // no such source
	EUNAUTHORIZED = "unauthorized" // missing or bad signature
	EFORBIDDEN    = "forbidden"    // not allowed from here, or not set up
	EINVALID      = "invalid"      // the request lacks something it needs (an event id)
	ECONFLICT     = "conflict"     // the record's state refuses the change unless forced (retry of a dead delivery, re-send of a delivered one)
	EUNAVAILABLE  = "unavailable"  // storage failed; the sender should retry
	EBUSY         = "busy"         // too many of this work at once (body searches): try again in a moment
	EINTERNAL     = "internal"     // a bug; details are logged, not sent
)

// ErrNotFound means no record has the given id.
var ErrNotFound = errors.New("not found")

// Error is an error a client may see: a code and a message safe to send.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or EINTERNAL for an error without one.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
