//go:build broken_earlyack

package bboltstore

// A deliberately broken build for the power-loss test: the committer
// answers a commit's writes once bbolt has written its pages, and only
// then fsyncs (see broken_off.go).
const (
	brokenNoSync   = true
	brokenEarlyAck = true
)

func init() { refuseBrokenBuild("broken_earlyack") }
