package cmdsend_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/cmdsend"
)

// writeScript writes a /bin/sh script into t's temporary directory and
// returns its path.
func writeScript(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// request is an attempt of an event with body to a destination that runs
// command with timeout.
func request(command []string, body string, timeout time.Duration) app.SendRequest {
	dest := &app.Destination{Name: "script", Command: command, Timeout: timeout, Concurrency: 1, SignatureHeaders: app.SignatureHeadersStandard}
	ev := &app.Event{Source: "shop", ID: "evt-1", Topic: "orders/create", Body: []byte(body),
		Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Shopify-Shop-Domain", Value: "a.myshopify.com"}}}
	return app.SendRequest{Dest: dest, Work: app.Work{Delivery: &app.Delivery{ID: 42, Destination: "script"}, Event: ev}, Attempt: 3, Now: time.Unix(1700000000, 0)}
}

func newSender(t *testing.T) *cmdsend.Sender {
	t.Helper()
	s := cmdsend.New(&app.Config{}, "test")
	t.Cleanup(s.Close)
	return s
}

// waitFile waits for the file at path to exist and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	apptest.Eventually(t, 10*time.Second, path+" to appear", func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && len(b) > 0
	})
	return string(b)
}

// waitGroupGone waits until no live process is left in the group pgid
// (SIGKILL takes effect after kill returns), failing the test after a few
// seconds. A zombie, dead and waiting for init to reap it, is not alive.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	apptest.Until(t, 10*time.Second, func() error {
		if live := liveInGroup(t, pgid); len(live) > 0 {
			return fmt.Errorf("process group %d still has processes: %v", pgid, live)
		}
		return nil
	})
}

// liveInGroup lists the processes of group pgid that are not zombies,
// from /proc.
func liveInGroup(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and parens.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) || f[0] == "Z" || f[0] == "X" {
			continue
		}
		live = append(live, string(b[:bytes.LastIndexByte(b, ')')+1]))
	}
	return live
}

func TestSend_Delivered(t *testing.T) {
	t.Run("BodyOnStdinByteExact", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "got")
		prog := writeScript(t, "cat > \"$1\"\n")
		body := "{\"a\":\"\\u003c/&\"}\x00\xff no newline at the end"
		res := newSender(t).Send(context.Background(), request([]string{prog, out}, body, 10*time.Second))
		if !res.Delivered || !res.Answered || res.Err != nil || res.Refused {
			t.Fatalf("answer = %+v, want delivered", res)
		}
		if got, err := os.ReadFile(out); err != nil || string(got) != body {
			t.Fatalf("stdin = %q (%v), want %q", got, err, body)
		}
	})
	t.Run("TransformedBody", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "got")
		req := request([]string{writeScript(t, "cat > \"$1\"\n"), out}, "original", 10*time.Second)
		req.Transformed = &app.Transformed{Body: []byte(`{"short":1}`), ContentType: "application/json"}
		if res := newSender(t).Send(context.Background(), req); !res.Delivered {
			t.Fatalf("answer = %+v", res)
		}
		if got, _ := os.ReadFile(out); string(got) != `{"short":1}` {
			t.Fatalf("stdin = %q, want the transformed body", got)
		}
	})
	t.Run("ArgvAsGivenNoShell", func(t *testing.T) {
		prog := writeScript(t, "for a in \"$@\"; do printf '[%s]' \"$a\"; done\n")
		res := newSender(t).Send(context.Background(), request([]string{prog, "a b", "$HOME", "*", ";echo x"}, "", 10*time.Second))
		if got, want := string(res.Snippet), "[a b][$HOME][*][;echo x]"; got != want {
			t.Fatalf("output = %q, want %q", got, want)
		}
	})
	t.Run("StdoutAndStderrInOrder", func(t *testing.T) {
		prog := writeScript(t, "echo a; echo b >&2; echo c\n")
		res := newSender(t).Send(context.Background(), request([]string{prog}, "", 10*time.Second))
		if got, want := string(res.Snippet), "a\nb\nc\n"; got != want || !res.Delivered {
			t.Fatalf("output = %q (%+v), want %q", got, res, want)
		}
	})
	t.Run("LongOutputKeptFirstKiB", func(t *testing.T) {
		// 2 MiB on each stream, far past a pipe's buffer: the command must
		// not block on its output.
		prog := writeScript(t, "head -c 2097152 /dev/zero | tr '\\0' a; head -c 2097152 /dev/zero | tr '\\0' b >&2\n")
		res := newSender(t).Send(context.Background(), request([]string{prog}, "", 30*time.Second))
		if !res.Delivered {
			t.Fatalf("answer = %+v", res)
		}
		if got, want := string(res.Snippet), strings.Repeat("a", app.MaxResponseSnippet); got != want {
			t.Fatalf("snippet = %d bytes %.20q…, want %d a", len(got), got, app.MaxResponseSnippet)
		}
	})
}

// The environment is PATH, the destination's env, the HOOKBOX_* variables
// and the headers an HTTP attempt would carry, and nothing of hookbox's own.
func TestSend_Environment(t *testing.T) {
	t.Setenv("HOOKBOX_LEAK", "should-not-pass")
	req := request([]string{"/usr/bin/env"}, "", 10*time.Second)
	req.Dest.Env = []string{"SHOP_TOKEN=tok", "MODE=live"}
	req.Dest.Headers = map[string]string{"X-Api-Key": "k1"}
	res := newSender(t).Send(context.Background(), req)
	if !res.Delivered {
		t.Fatalf("answer = %+v", res)
	}
	got := strings.Split(strings.TrimSuffix(string(res.Snippet), "\n"), "\n")
	want := []string{
		"PATH=" + os.Getenv("PATH"),
		"SHOP_TOKEN=tok", "MODE=live",
		"HOOKBOX_EVENT_ID=evt-1", "HOOKBOX_SOURCE=shop", "HOOKBOX_TOPIC=orders/create",
		"HOOKBOX_DELIVERY_ID=42", "HOOKBOX_ATTEMPT=3",
		"HOOKBOX_WEBHOOK_ID=" + app.MessageID("shop", "evt-1", "script"),
		"HOOKBOX_HEADER_CONTENT_TYPE=application/json",
		"HOOKBOX_HEADER_IDEMPOTENCY_KEY=" + app.MessageID("shop", "evt-1", "script"),
		"HOOKBOX_HEADER_USER_AGENT=hookbox/test",
		"HOOKBOX_HEADER_WEBHOOK_ID=" + app.MessageID("shop", "evt-1", "script"),
		"HOOKBOX_HEADER_WEBHOOK_TIMESTAMP=1700000000",
		"HOOKBOX_HEADER_X_API_KEY=k1",
		"HOOKBOX_HEADER_X_HOOKBOX_ATTEMPT=3",
		"HOOKBOX_HEADER_X_HOOKBOX_EVENT_ID=evt-1",
		"HOOKBOX_HEADER_X_HOOKBOX_SOURCE=shop",
		"HOOKBOX_HEADER_X_HOOKBOX_TOPIC=orders/create",
		"HOOKBOX_HEADER_X_SHOPIFY_SHOP_DOMAIN=a.myshopify.com",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("environment:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSend_ExitStatus(t *testing.T) {
	for _, tt := range []struct {
		name, script, err string
		refused           bool
	}{
		{"TempFail", "echo busy; exit 75\n", "the command asked for a retry (exit 75)", false},
		{"Other", "exit 1\n", "the command failed (exit 1)", false},
		{"DataErr", "echo bad order >&2; exit 65\n", "dead: the command refused the event (exit 65), not retried", true},
		{"Signal", "kill -SEGV $$\n", "the command was killed by signal SIGSEGV", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := newSender(t).Send(context.Background(), request([]string{writeScript(t, tt.script)}, "{}", 10*time.Second))
			if res.Delivered || !res.Answered || res.Err == nil || res.Err.Error() != tt.err || res.Refused != tt.refused || res.Status != 0 {
				t.Fatalf("answer = %+v (err %v), want err %q refused %v", res, res.Err, tt.err, tt.refused)
			}
		})
	}
	t.Run("OutputKept", func(t *testing.T) {
		res := newSender(t).Send(context.Background(), request([]string{writeScript(t, "echo busy; exit 75\n")}, "", 10*time.Second))
		if string(res.Snippet) != "busy\n" {
			t.Fatalf("snippet = %q", res.Snippet)
		}
	})
}

// The timeout kills the command's whole process group: the child it
// started is gone too, and the attempt says why it failed.
func TestSend_TimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	prog := writeScript(t, "sleep 1000 & echo $$ $! > \""+pidFile+"\"\nsleep 1000\n")
	res := newSender(t).Send(context.Background(), request([]string{prog}, "", 300*time.Millisecond))
	if res.Delivered || !res.Answered || res.Err == nil || res.Err.Error() != "the command was killed at its 300ms timeout" {
		t.Fatalf("answer = %+v (err %v)", res, res.Err)
	}
	fields := strings.Fields(waitFile(t, pidFile))
	pgid, _ := strconv.Atoi(fields[0])
	child, _ := strconv.Atoi(fields[1])
	waitGroupGone(t, pgid)
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); err == nil && !bytes.Contains(b, []byte(") Z ")) {
		t.Fatalf("child %d is still alive: %s", child, b)
	}
}

// A child that keeps the output pipe open after the command exited does
// not hold the attempt: it is killed with the group.
func TestSend_ChildHoldingPipe(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pgid")
	prog := writeScript(t, "echo $$ > \""+pidFile+"\"\nsleep 1000 &\necho done\n")
	res := newSender(t).Send(context.Background(), request([]string{prog}, "", time.Hour))
	if !res.Delivered || string(res.Snippet) != "done\n" {
		t.Fatalf("answer = %+v", res)
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, pidFile)))
	waitGroupGone(t, pgid)
}

// A command that does not read its input, with a body larger than a pipe
// holds, neither blocks nor fails the attempt.
func TestSend_InputNotRead(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	res := newSender(t).Send(context.Background(), request([]string{writeScript(t, "exit 0\n")}, body, time.Hour))
	if !res.Delivered || res.Err != nil {
		t.Fatalf("answer = %+v", res)
	}
}

// Stop refuses new starts; Close kills the commands in flight, whose
// attempts are then not recorded (Answered false).
func TestSend_StopAndClose(t *testing.T) {
	t.Run("StopRefusesStarts", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ran")
		s := newSender(t)
		s.Stop()
		res := s.Send(context.Background(), request([]string{writeScript(t, "touch \""+marker+"\"\n")}, "", time.Hour))
		if res.Answered || res.Delivered || res.Err == nil {
			t.Fatalf("answer = %+v", res)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran after Stop")
		}
	})
	t.Run("CloseKillsInFlight", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pgid")
		s := newSender(t)
		prog := writeScript(t, "sleep 1000 &\necho $$ > \""+pidFile+"\"\nwait\n")
		done := make(chan app.Answer, 1)
		go func() { done <- s.Send(context.Background(), request([]string{prog}, "", time.Hour)) }()
		pgid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, pidFile)))
		s.Close()
		res := <-done
		if res.Answered || res.Delivered {
			t.Fatalf("answer = %+v, want one that is not recorded", res)
		}
		waitGroupGone(t, pgid)
	})
}

// A program removed after the config was loaded fails the attempt with
// its path, and no argument (one may be a secret).
func TestSend_ProgramGone(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "gone")
	res := newSender(t).Send(context.Background(), request([]string{prog, "--token=SECRET"}, "", time.Hour))
	if res.Delivered || res.Err == nil || !strings.Contains(res.Err.Error(), prog) || strings.Contains(res.Err.Error(), "SECRET") {
		t.Fatalf("answer = %+v (err %v)", res, res.Err)
	}
	if !bytes.Equal(res.Snippet, nil) {
		t.Fatalf("snippet = %q", res.Snippet)
	}
}

// BenchmarkSend is the cost of one attempt of a command that reads its
// input and exits 0: a process started, fed, waited for and its group
// killed.
func BenchmarkSend(b *testing.B) {
	p := filepath.Join(b.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat > /dev/null\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	s := cmdsend.New(&app.Config{}, "bench")
	defer s.Close()
	req := request([]string{p}, strings.Repeat("x", 2048), time.Minute)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := s.Send(context.Background(), req); !res.Delivered {
				b.Fatalf("answer = %+v", res)
			}
		}
	})
}
