// A destination that runs a command: [[destination]] command (instead of
// url) and env. The program is checked at load, so that a typo or a
// missing chmod stops start-up (or a reload) with its key, rather than
// failing every delivery.

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"hookbox/app"
)

// command checks r's command and env into d. Errors name the key and
// the program, never an argument or a value of env (either may be a
// secret).
func (v *validator) command(key string, d *app.Destination, r rawDestination) {
	if len(r.Command) == 0 {
		if r.Env != nil {
			v.fail(key+".env", "env is for a command: set command = [\"/path/to/program\", …] (or remove env)")
			return
		}
		v.fail(key+".command", "is empty: name the program, e.g. [\"/usr/local/bin/on-order\"]")
		return
	}
	prog := r.Command[0]
	k0 := key + ".command[0]"
	switch {
	case prog == "":
		v.fail(k0, "is empty: name the program by its absolute path")
		return
	case !filepath.IsAbs(prog):
		v.fail(k0, fmt.Sprintf("%s is not an absolute path (no shell runs it and no PATH is searched): write e.g. /usr/local/bin/%s", prog, filepath.Base(prog)))
		return
	}
	for i, a := range r.Command {
		if strings.IndexByte(a, 0) >= 0 {
			v.fail(fmt.Sprintf("%s.command[%d]", key, i), "holds a NUL byte")
			return
		}
	}
	fi, err := os.Stat(prog)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.fail(k0, prog+" does not exist")
		return
	case err != nil:
		v.fail(k0, fmt.Sprintf("%s cannot be read: %v", prog, errors.Unwrap(err)))
		return
	case !fi.Mode().IsRegular():
		v.fail(k0, prog+" is not a regular file")
		return
	case fi.Mode().Perm()&0o111 == 0 || executable(prog) != nil:
		v.fail(k0, prog+" is not executable (chmod +x, and readable by the user hookbox runs as)")
		return
	}
	d.Command = r.Command
	d.URL = ""
	seen := map[string]bool{}
	for i, e := range r.Env {
		ki := fmt.Sprintf("%s.env[%d]", key, i)
		name, value, hasValue := strings.Cut(e, "=")
		switch {
		case !envName.MatchString(name):
			v.fail(ki, "write NAME (hookbox's own value) or NAME=value, NAME of letters, digits and '_'")
			return
		case strings.HasPrefix(name, "HOOKBOX_"):
			v.fail(ki, name+": the HOOKBOX_* variables are set by hookbox for each attempt")
			return
		case seen[name]:
			v.fail(ki, name+" is named twice")
			return
		case strings.IndexByte(value, 0) >= 0:
			v.fail(ki, "the value of "+name+" holds a NUL byte")
			return
		}
		seen[name] = true
		if !hasValue {
			own, ok := v.env(name)
			if !ok {
				v.fail(ki, fmt.Sprintf("environment variable %s is not set (hookbox passes its own value of a bare name)", name)+v.setItIn())
				return
			}
			value = own
		}
		d.Env = append(d.Env, name+"="+value)
	}
}
