// The mistakes of a config file: the validator records every one, each
// with its line, and the load reports them all at once (up to
// maxErrors), in the order of the file.

package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"hookbox/app"
)

// maxErrors is the most mistakes a load reports one by one; the rest are
// counted ("and 3 more").
const maxErrors = 20

// validator checks a raw config into its Config and records every
// mistake.
type validator struct {
	file  string
	env   func(string) (string, bool)
	lines lineIndex
	errs  []*app.ConfigError
	// broken are the paths of keys whose value had the wrong type
	// (reported by shape): a check of what they would have held is
	// not reported again.
	broken []string
}

// fail records that key (as shown: "source[1] (shop).secret") is wrong.
func (v *validator) fail(key, reason string) {
	if v.isBroken(key) {
		return
	}
	v.errs = append(v.errs, &app.ConfigError{File: v.file, Line: v.lines.line(key), Key: key, Reason: reason})
}

// isBroken reports whether key (as shown) is, or is inside, a key whose
// mistake shape reported.
func (v *validator) isBroken(key string) bool {
	path := tableName.ReplaceAllString(key, "")
	for _, b := range v.broken {
		if path == b || strings.HasPrefix(path, b+".") || strings.HasPrefix(path, b+"[") {
			return true
		}
	}
	return false
}

// shapeFail records a mistake found by shape, at path.
func (v *validator) shapeFail(path, key, reason string) {
	v.errs = append(v.errs, &app.ConfigError{File: v.file, Line: v.lines.line(path), Key: key, Reason: reason})
}

// failed is how many mistakes are recorded: a check compares it before
// and after a step to know whether the step failed.
func (v *validator) failed() int { return len(v.errs) }

// result is the load's error: nil, the one mistake as the
// *app.ConfigError it is, or all of them joined, one line each, in the
// order of the file (the ones without a line last).
func (v *validator) result() error {
	switch len(v.errs) {
	case 0:
		return nil
	case 1:
		return v.errs[0]
	}
	errs := append([]*app.ConfigError(nil), v.errs...)
	sort.SliceStable(errs, func(i, j int) bool {
		li, lj := errs[i].Line, errs[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	out := make([]error, 0, maxErrors+1)
	for i, e := range errs {
		if i == maxErrors {
			out = append(out, fmt.Errorf("%s: and %d more", v.file, len(errs)-maxErrors))
			break
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}
