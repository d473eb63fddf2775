// Package cmdsend delivers by running a program: the destination's
// command, with the body on standard input and the delivery's metadata in
// HOOKBOX_* variables, in a process group of its own that the timeout
// kills whole. It is the dispatcher's app.Sender for destinations with a
// command (app/httpsend is the one for a URL).
package cmdsend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"hookbox/app"
)

var _ app.Sender = (*Sender)(nil)

// Sender runs a destination's command once per attempt. The program is
// run directly (no shell), with an environment of PATH, the destination's
// env and the HOOKBOX_* variables only (app.CommandEnv). Exit status 0
// delivers; 65 (EX_DATAERR) refuses the delivery for good; anything else,
// a signal or the timeout is a failed attempt, retried on the schedule.
type Sender struct {
	// out builds the headers for the config in force (Apply): the ones an
	// HTTP attempt would carry are the command's HOOKBOX_HEADER_*.
	out     atomic.Pointer[app.Outbound]
	version string
	// path is the PATH commands get: hookbox's own.
	path string

	mu      sync.Mutex
	stopped bool             // no new start (Stop)
	closed  bool             // no new start, and the groups were killed (Close)
	running map[int]struct{} // the process groups in flight, by pgid
}

// New builds the command sender for cfg's destinations; version goes
// into the User-Agent header (HOOKBOX_HEADER_USER_AGENT).
func New(cfg *app.Config, version string) *Sender {
	s := &Sender{version: version, path: os.Getenv("PATH"), running: map[int]struct{}{}}
	s.out.Store(app.NewOutbound(cfg, version))
	return s
}

// Apply puts cfg's sources and destinations in force for the attempts
// that start from now on (a destination's command comes with each
// attempt's request).
func (s *Sender) Apply(cfg *app.Config) { s.out.Store(app.NewOutbound(cfg, s.version)) }

// Stop refuses every later start; the commands running go on.
func (s *Sender) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// Close kills the process groups of the commands running (their attempts
// are not recorded: their answer says Answered false) and refuses every
// later start.
func (s *Sender) Close() {
	s.mu.Lock()
	s.stopped, s.closed = true, true
	pgids := make([]int, 0, len(s.running))
	for pgid := range s.running {
		pgids = append(pgids, pgid)
	}
	s.mu.Unlock()
	for _, pgid := range pgids {
		killGroup(pgid)
	}
}

// errStopped is the error of an attempt that did not start because
// hookbox is stopping.
var errStopped = errors.New("not started: hookbox is stopping")

// pipeGrace is how long the output of a command is read on after its
// process exited and its group was killed: only a descendant that left
// the group (setsid) can still hold the pipe then, and it does not hold
// the attempt.
const pipeGrace = 2 * time.Second

// Send runs req's destination's command once, with the event's body (or
// the one req's transform made) on its standard input, and keeps the
// first app.MaxResponseSnippet bytes of what it writes to standard output
// and standard error, in the order written.
func (s *Sender) Send(ctx context.Context, req app.SendRequest) app.Answer {
	if ctx.Err() != nil { // shutting down
		return app.Answer{Err: context.Cause(ctx)}
	}
	dest, e := req.Dest, req.Work.Event
	header, err := s.out.Load().Header(dest, e, req.Transformed, req.Attempt, req.Now)
	if err != nil {
		return app.Answer{Err: err}
	}
	body := e.Body
	if req.Transformed != nil {
		body = req.Transformed.Body
	}
	env := app.CommandEnv(s.path, dest, req.Work, req.Attempt, header)
	return s.run(ctx, dest, body, env)
}

// run runs dest's command with body on its standard input and env as its
// whole environment, under dest's timeout.
func (s *Sender) run(ctx context.Context, dest *app.Destination, body []byte, env []string) app.Answer {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return app.Answer{Err: fmt.Errorf("cannot start: %w", err)}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return app.Answer{Err: fmt.Errorf("cannot start: %w", err)}
	}
	// The child gets the files themselves (no copying goroutine that Wait
	// would wait on): Wait returns when the process exits, whoever else
	// still holds the pipes.
	cmd := &exec.Cmd{Path: dest.Command[0], Args: dest.Command, Env: env, Stdin: stdinR, Stdout: outW, Stderr: outW}
	setGroup(cmd)

	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		closeAll(stdinR, stdinW, outR, outW)
		return app.Answer{Err: errStopped}
	}
	// Started under the lock, so that Close sees every group that runs:
	// a start is a fork and an exec, short beside a send.
	err = cmd.Start()
	var pgid int
	if err == nil {
		pgid = cmd.Process.Pid // Setpgid: the group is the process's id
		s.running[pgid] = struct{}{}
	}
	s.mu.Unlock()
	stdinR.Close()
	outW.Close()
	if err != nil {
		stdinW.Close()
		outR.Close()
		return app.Answer{Err: startError(err)}
	}

	// Its output: the first MaxResponseSnippet bytes kept, the rest read
	// and thrown away, so that a chatty command never blocks on a full pipe.
	output := make(chan []byte, 1)
	go func() { output <- readOutput(outR) }()
	// Its input, byte-exact; a command that exits without reading all of
	// it ends the write (EPIPE), which is not an error of the attempt.
	go func() {
		stdinW.Write(body) //nolint:errcheck // see above
		stdinW.Close()
	}()

	// The timeout (and shutdown) kill the whole group: the command and
	// every child it started that did not leave the group.
	tctx, cancel := context.WithTimeout(ctx, dest.Timeout)
	defer cancel()
	stopKill := context.AfterFunc(tctx, func() { killGroup(pgid) })
	waitErr := cmd.Wait()
	// Timed out only when the timeout's kill ran: a command that exited
	// as the deadline came has its own status.
	timedOut := !stopKill() && ctx.Err() == nil
	// What it left running in its group goes with it: concurrency bounds
	// the processes, not only the commands.
	killGroup(pgid)
	s.mu.Lock()
	delete(s.running, pgid)
	closed := s.closed
	s.mu.Unlock()

	var snippet []byte
	select {
	case snippet = <-output:
	case <-time.After(pipeGrace):
		outR.Close() // a descendant that left the group holds it: not the attempt
		snippet = <-output
	}
	stdinW.Close() // unblocks a write to a descendant that holds stdin and does not read it

	if closed || ctx.Err() != nil {
		return app.Answer{Err: errors.New("killed: hookbox stopped"), Snippet: snippet}
	}
	res := app.Answer{Answered: true, Snippet: snippet}
	var ee *exec.ExitError
	switch {
	case timedOut:
		res.Err = fmt.Errorf("the command was killed at its %s timeout", app.ShortDuration(dest.Timeout))
	case waitErr == nil:
		res.Delivered = true
	case errors.As(waitErr, &ee):
		res.Err = exitError(ee.ProcessState)
		res.Refused = ee.ExitCode() == app.ExitDataErr
	default:
		res.Err = waitErr
	}
	return res
}

// exitError says, in words, how a command that failed ended: "the command
// failed (exit 1)", "the command asked for a retry (exit 75)", "dead: the
// command refused the event (exit 65), not retried", or "the command was
// killed by signal SIGSEGV" (Go's own texts are "exit status 1" and
// "signal: …"). The page reads the code from "(exit N)".
func exitError(ps *os.ProcessState) error {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Errorf("the command was killed by signal %s", signalName(ws.Signal()))
	}
	switch code := ps.ExitCode(); code {
	case app.ExitDataErr:
		return fmt.Errorf("dead: the command refused the event (exit %d), not retried", code)
	case app.ExitTempFail:
		return fmt.Errorf("the command asked for a retry (exit %d)", code)
	default:
		return fmt.Errorf("the command failed (exit %d)", code)
	}
}

// startError is the error of a command that could not be started (the
// program was removed or changed since the config was loaded): without the
// arguments, which may hold a secret.
func startError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot start %s: %v", pe.Path, pe.Err)
	}
	return fmt.Errorf("cannot start: %w", err)
}

// readOutput keeps the first app.MaxResponseSnippet bytes of r, reads the
// rest to its end (or an error) and throws it away, then closes r.
func readOutput(r *os.File) []byte {
	defer r.Close()
	var kept bytes.Buffer
	io.CopyN(&kept, r, app.MaxResponseSnippet) //nolint:errcheck // what came is kept
	io.Copy(io.Discard, r)                     //nolint:errcheck // thrown away
	if kept.Len() == 0 {
		return nil
	}
	return kept.Bytes()
}

// closeAll closes each of files.
func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}
