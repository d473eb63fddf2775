// A reload goes through one ordered list of appliers: each may refuse the
// new config before anything changed, then each puts it in force, in
// order.

package app

import (
	"fmt"
	"time"
)

// Applier puts a new config in force in one part of the server.
type Applier struct {
	// Name is the part's, in a refusal.
	Name string
	// Check refuses next (old is in force) before any part changed; nil
	// takes any config that loaded and settled.
	Check func(old, next *Config) error
	// Apply puts next in force.
	Apply func(next *Config)
}

// Appliers are a reload's parts, in the order they take a new config:
// what another part relies on first (the dispatcher has a destination's
// lane before the receiver routes to it).
type Appliers []Applier

// Check asks every applier whether it takes next (old is in force), in
// order, and returns the first refusal, naming the part. Nothing changes.
func (as Appliers) Check(old, next *Config) error {
	for _, a := range as {
		if a.Check == nil {
			continue
		}
		if err := a.Check(old, next); err != nil {
			return fmt.Errorf("%s: %w", a.Name, err)
		}
	}
	return nil
}

// Apply puts next, which Check took, in force in every part, in order.
func (as Appliers) Apply(next *Config) {
	for _, a := range as {
		a.Apply(next)
	}
}

// Refusal is a config a reload refused: the old one kept running.
type Refusal struct {
	Path string
	At   time.Time
	// Reasons are its mistakes, each "file: key: reason".
	Reasons []string
}

// Reloaded is what one reload did: the changes it put in force, or the
// refusal that kept the running config.
type Reloaded struct {
	// Path is the file the server read.
	Path string
	// Diff is what changed (empty when refused).
	Diff ConfigDiff
	// Refused is the refusal, nil when the config was put in force.
	Refused *Refusal
}
