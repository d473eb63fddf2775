//go:build !race

package bboltstore

// raceEnabled: see race_test.go.
const raceEnabled = false
