package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"hookbox/app"
)

// sourceBody loads the config of opts and, for the commands that take a
// body as the server would (sign, route test; cmd names the command in
// errors), finds its source called name and reads the body at file (-:
// stdin), at most server.max_body_bytes of it. It prints what stops the
// command on stderr and returns a code >= 0 then.
func sourceBody(cmd string, opts *configOptions, name, file string, stdin io.Reader, stderr io.Writer) (*app.Config, *app.Source, []byte, int) {
	cfg, err := opts.load()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, nil, 1
	}
	src := cfg.SourceByName(name)
	if src == nil {
		var names []string
		for _, s := range cfg.Sources {
			names = append(names, s.Name)
		}
		fmt.Fprintf(stderr, "hookbox %s: %s has no [[source]] named %q (it has: %s)\n", cmd, *opts.path, name, strings.Join(names, ", "))
		return nil, nil, nil, 1
	}
	max := cfg.Server.MaxBodyBytes
	var body []byte
	if file == "-" {
		body, err = io.ReadAll(io.LimitReader(stdin, int64(max)+1))
	} else {
		body, err = readBounded(file, max)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hookbox %s: read the body: %v\n", cmd, err)
		return nil, nil, nil, 1
	}
	if len(body) > max {
		fmt.Fprintf(stderr, "hookbox %s: the body is over server.max_body_bytes (%d): the server would answer 413\n", cmd, max)
		return nil, nil, nil, 1
	}
	return cfg, src, body, -1
}

// readBounded reads at most max+1 bytes of file: enough to tell it is too large.
func readBounded(file string, max int) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(max)+1))
}
