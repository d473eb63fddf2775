package dispatch_test

import "time"

// The clock's start the dispatcher's tests share.
var now0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
