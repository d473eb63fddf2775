//go:build !broken_nosync && !broken_earlyack

package bboltstore

// The power-loss test (app/cli/powerloss_test.go) shows that it catches a build
// that does not keep the promise: built with the tag broken_nosync,
// bbolt runs with NoSync; with broken_earlyack, the committer answers
// before the commit's fsync. Such a build refuses to start unless
// HOOKBOX_BROKEN_BUILD names its tag (broken_on.go). No build script
// passes these tags: in every real build both switches are off, here, as
// constants the compiler removes with the code they guard.
const (
	brokenNoSync   = false // bbolt's NoSync
	brokenEarlyAck = false // answer, then fsync
)
