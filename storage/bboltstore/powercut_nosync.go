//go:build powercut_nosync

package bboltstore

// A deliberately broken build for the power-loss test: bbolt never
// fsyncs a commit (see powercut_off.go).
const (
	brokenNoSync   = true
	brokenEarlyAck = false
)

func init() { refuseBrokenBuild("powercut_nosync") }
