//go:build race

package bboltstore

// raceEnabled: the tests run with the race detector, under which
// sync.Pool drops a share of what is put back on purpose, so counts of
// allocations say nothing about the shipped build.
const raceEnabled = true
