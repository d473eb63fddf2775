//go:build race

package clitest

// RaceEnabled reports whether the tests run with the race detector.
const RaceEnabled = true
