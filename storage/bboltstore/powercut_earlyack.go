//go:build powercut_earlyack

package bboltstore

// A deliberately broken build for the power-loss test: the committer
// answers a commit's writes once bbolt has written its pages, and only
// then fsyncs (see powercut_off.go).
const (
	brokenNoSync   = true
	brokenEarlyAck = true
)

func init() { refuseBrokenBuild("powercut_earlyack") }
