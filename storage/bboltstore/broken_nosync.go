//go:build broken_nosync

package bboltstore

// A deliberately broken build for the power-loss test: bbolt never
// fsyncs a commit (see broken_off.go).
const (
	brokenNoSync   = true
	brokenEarlyAck = false
)

func init() { refuseBrokenBuild("broken_nosync") }
