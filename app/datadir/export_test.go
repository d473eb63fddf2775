//go:build unix

package datadir

// NamedOnly makes NewFile name its files until the returned func is called.
func NamedOnly() (restore func()) {
	namedOnly = true
	return func() { namedOnly = false }
}
