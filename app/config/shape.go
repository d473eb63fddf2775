// The shape of a config file before its values: every key known, every
// value of the type its key takes. The file is first read as plain TOML
// (tables, lists, strings, numbers) and walked against the raw types of
// load.go, so that every unknown key and every mistaken type is reported
// at once, each in a sentence ("topics must be a list"), rather than the
// first one as the decoder's "incompatible types". The keys found wrong
// are taken out, and the rest is decoded and validated.

package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// tomlFields returns the TOML keys of struct t (embedded structs' too).
func tomlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k, ft := range tomlFields(f.Type) {
				out[k] = ft
			}
			continue
		}
		if tag := f.Tag.Get("toml"); tag != "" && tag != "-" {
			out[strings.Split(tag, ",")[0]] = f.Type
		}
	}
	return out
}

// shape checks table m, at path (e.g. "source[1]") and shown as key
// (e.g. "source[1] (shop)"), against struct t. It reports unknown keys
// and wrong types, and deletes them from m.
func (v *validator) shape(path, key string, m map[string]any, t reflect.Type) {
	fields := tomlFields(t)
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	sort.Strings(known)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, kk := join(path, k), join(key, k)
		ft, ok := fields[k]
		if !ok {
			meant := suggest(k, known)
			if meant == "" {
				v.shapeFail(p, kk, "unknown key")
			} else {
				v.shapeFail(p, kk, "unknown key; did you mean "+meant+"?")
				if _, set := m[meant]; !set {
					// The key meant is missing because of this typo: say it once.
					v.broken = append(v.broken, join(path, meant))
				}
			}
			delete(m, k)
			continue
		}
		if !v.value(p, kk, k, m[k], ft) {
			v.broken = append(v.broken, p)
			delete(m, k)
		}
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// value checks one value x of key name against type t; false when it is
// of another type (reported).
func (v *validator) value(path, key, name string, x any, t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := x.(string); !ok {
			v.shapeFail(path, key, mustBeString(name, x))
			return false
		}
	case reflect.Int, reflect.Int64:
		if _, ok := x.(int64); !ok {
			v.shapeFail(path, key, mustBeNumber(name, x))
			return false
		}
	case reflect.Bool:
		if _, ok := x.(bool); !ok {
			reason := "must be true or false, without quotes"
			if s, ok := x.(string); ok && (s == "true" || s == "false") {
				reason += fmt.Sprintf(": %s = %s", name, s)
			}
			v.shapeFail(path, key, reason)
			return false
		}
	case reflect.Map:
		tbl, ok := x.(map[string]any)
		if !ok {
			v.shapeFail(path, key, fmt.Sprintf(`must be a table of names and strings: %s = { X-Name = "value" }`, name))
			return false
		}
		good := true
		for k, e := range tbl {
			if _, ok := e.(string); !ok {
				v.shapeFail(join(path, k), join(key, k), mustBeString(k, e))
				good = false
			}
		}
		return good
	case reflect.Struct:
		tbl, ok := x.(map[string]any)
		if !ok {
			v.shapeFail(path, key, fmt.Sprintf("must be a table: write [%s] on a line of its own, its keys under it", path))
			return false
		}
		v.shape(path, key, tbl, t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return v.tables(path, key, x, t.Elem())
		}
		return v.strings(path, key, name, x)
	}
	return true
}

// tables checks an array of tables ([[source]]).
func (v *validator) tables(path, key string, x any, t reflect.Type) bool {
	var list []map[string]any
	switch x := x.(type) {
	case []map[string]any:
		list = x
	case []any:
		for _, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				v.shapeFail(path, key, fmt.Sprintf("must be tables, each under its own [[%s]] line", path))
				return false
			}
			list = append(list, m)
		}
	case map[string]any:
		v.shapeFail(path, key, fmt.Sprintf("is a list of tables: write [[%s]] (two brackets), not [%s]", path, path))
		return false
	default:
		v.shapeFail(path, key, fmt.Sprintf("is a list of tables: write [[%s]] on a line of its own, its keys under it", path))
		return false
	}
	for i, m := range list {
		p, k := fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("%s[%d]", key, i)
		if n, ok := m["name"].(string); ok && n != "" {
			k = fmt.Sprintf("%s (%s)", k, n)
		}
		v.shape(p, k, m, t)
	}
	return true
}

// strings checks a list of strings.
func (v *validator) strings(path, key, name string, x any) bool {
	list, ok := x.([]any)
	if !ok {
		reason := "must be a list"
		switch s := x.(type) {
		case string:
			if secretish(name) {
				reason += fmt.Sprintf(`, in brackets: %s = ["…"]`, name)
			} else {
				reason += fmt.Sprintf(": %s = [%q]", name, s)
			}
		default:
			reason += fmt.Sprintf(` of strings, in brackets: %s = ["…"]`, name)
		}
		v.shapeFail(path, key, reason)
		return false
	}
	good := true
	for i, e := range list {
		if _, ok := e.(string); !ok {
			v.shapeFail(fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("%s[%d]", key, i), "must be a string, in quotes"+quoted(name, e))
			good = false
		}
	}
	return good
}

// mustBeString is the reason for a value x of key name that is not a
// string.
func mustBeString(name string, x any) string {
	if _, ok := x.([]any); ok {
		return "must be one string, not a list"
	}
	if _, ok := x.(map[string]any); ok {
		return "must be a string, not a table"
	}
	q := quoted(name, x)
	if q != "" {
		q = fmt.Sprintf(": %s = %s", name, q[2:])
	}
	return "must be a string, in quotes" + q
}

// quoted is ": \"5\"", x written as a string, or "" when x is no scalar
// or key name may hold a secret.
func quoted(name string, x any) string {
	if secretish(name) {
		return ""
	}
	var s string
	switch x := x.(type) {
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case time.Time:
		s = x.Format(time.RFC3339)
	default:
		return ""
	}
	return ": " + strconv.Quote(s)
}

// mustBeNumber is the reason for a value x of key name that is not a
// whole number.
func mustBeNumber(name string, x any) string {
	reason := "must be a whole number, without quotes"
	switch x := x.(type) {
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			reason += fmt.Sprintf(": %s = %d", name, n)
		}
	case float64:
		reason = "must be a whole number"
	}
	return reason
}

// secretish reports whether key name may hold a secret or a credential:
// its value is never quoted back.
func secretish(name string) bool {
	return strings.Contains(name, "secret") || strings.HasPrefix(name, "api_key") || strings.Contains(name, "password") || strings.HasSuffix(name, "url") ||
		strings.HasSuffix(name, "_env") || name == "env" || name == "command" || name == "headers"
}
