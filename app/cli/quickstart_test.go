package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
)

// quickStart returns the commands of README's quick start, in order, with
// their comments removed: the test runs what a reader copies.
func quickStart(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(clitest.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\n## Quick start\n")
	if i < 0 {
		t.Fatal(`README.md has no "## Quick start" section`)
	}
	if lines := strings.Count(text[:i], "\n"); lines > 25 {
		t.Errorf("the quick start begins on line %d of README.md: past the first screen", lines+2)
	}
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	if start < 0 {
		t.Fatal("the quick start has no ```sh block")
	}
	block := text[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		if j := strings.Index(line, "  # "); j >= 0 {
			line = line[:j]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// freeAddr returns a 127.0.0.1 address no one listens on just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// output collects a process's output while it runs.
type output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) { o.mu.Lock(); defer o.mu.Unlock(); return o.b.Write(p) }
func (o *output) String() string              { o.mu.Lock(); defer o.mu.Unlock(); return o.b.String() }

// TestQuickStart walks README's quick start as written: build, start the
// sink and the server, send, then a real browser logs in with the
// password the server printed and finds the event delivered, and the sink
// printed it with a good signature. Only the ports (and where the binary
// goes) differ, so that it runs beside other tests.
func TestQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a browser")
	}
	exe := chromium()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on the CI machine: .ci/run installs Debian's chromium")
		}
		t.Skip("no Chromium here (apt-get install chromium)")
	}
	cmds := quickStart(t)
	if len(cmds) != 4 {
		t.Fatalf("the quick start has %d commands, the test knows 4 (build, sink, serve, send): %q", len(cmds), cmds)
	}
	build, sinkCmd, serveCmd, send := cmds[0], cmds[1], cmds[2], cmds[3]
	const readmeSink = "127.0.0.1:9000"
	switch {
	case build != "go build -o hookbox .":
		t.Fatalf("build command %q", build)
	case !strings.HasPrefix(sinkCmd, "./hookbox sink ") || !strings.Contains(sinkCmd, readmeSink):
		t.Fatalf("sink command %q", sinkCmd)
	case serveCmd != "./hookbox" && serveCmd != "go run .":
		t.Fatalf("serve command %q", serveCmd)
	case !strings.Contains(send, "./hookbox sign ") || !strings.Contains(send, "-send"):
		t.Fatalf("send command %q", send)
	}

	dir := t.TempDir()
	repoRoot := clitest.Root(t)
	config, err := os.ReadFile(filepath.Join(repoRoot, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(config, []byte(`"http://`+readmeSink+`/"`)) {
		t.Fatalf("config.toml's demo destination is not the sink on %s", readmeSink)
	}
	sinkAddr, serverAddr := freeAddr(t), freeAddr(t)
	config = bytes.ReplaceAll(config, []byte(readmeSink), []byte(sinkAddr))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOOKBOX_LISTEN="+serverAddr, "HOOKBOX_PASSWORD=", "CI=")

	// 1. Build, into the temporary directory rather than the checkout.
	b := exec.Command("sh", "-c", strings.Replace(build, "-o hookbox", "-o "+filepath.Join(dir, "hookbox"), 1))
	b.Dir = repoRoot
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	// run starts line in dir and stops it at the end of the test.
	run := func(line string) *output {
		cmd := exec.Command("sh", "-c", "exec "+line)
		cmd.Dir, cmd.Env = dir, env
		return startInTerminal(t, cmd)
	}
	// 2. The sink, 3. the server.
	sinkOut := run(strings.ReplaceAll(sinkCmd, readmeSink, sinkAddr))
	apptest.Eventually(t, time.Minute, "the sink listening", func() bool { return strings.Contains(sinkOut.String(), "listening") })
	if !strings.Contains(sinkOut.String(), "checking webhook-signature") {
		t.Fatalf("the sink does not check signatures:\n%s", sinkOut)
	}
	if serveCmd == "go run ." {
		serveCmd = "./hookbox"
	}
	serverOut := run(serveCmd)
	apptest.Eventually(t, time.Minute, "the server started", func() bool { return strings.Contains(serverOut.String(), "hookbox started") })
	m := regexp.MustCompile(`generated a status page password.* user=(\S+) password=(\S+)`).FindStringSubmatch(serverOut.String())
	if m == nil {
		t.Fatalf("the server printed no password:\n%s", serverOut)
	}
	user, password := m[1], m[2]

	// 4. Send.
	s := exec.Command("sh", "-c", send)
	s.Dir, s.Env = dir, env
	answer, err := s.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s\nserver:\n%s", send, err, answer, serverOut)
	}
	am := regexp.MustCompile(`^200 \{"status":"accepted","id":"([^"]+)"\}`).FindSubmatch(answer)
	if am == nil {
		t.Fatalf("send answered %q", answer)
	}
	id := string(am[1])
	apptest.Eventually(t, time.Minute, "the sink printing the delivery", func() bool { return strings.Contains(sinkOut.String(), "event="+id) })
	var line string
	for sc := bufio.NewScanner(strings.NewReader(sinkOut.String())); sc.Scan(); {
		if strings.Contains(sc.Text(), "event="+id) {
			line = sc.Text()
		}
	}
	if !strings.Contains(line, "source=demo") || !strings.Contains(line, "topic=push") || !strings.HasSuffix(line, "signature ok") {
		t.Fatalf("the sink printed %q", line)
	}

	// The page, in a real browser, with the password the server printed.
	profile, err := os.MkdirTemp("", "hookbox-chromium")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	base := "http://" + serverAddr
	var events, detail string
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`input[name="password"]`),
		chromedp.SendKeys(`input[name="user"]`, user),
		chromedp.SendKeys(`input[name="password"]`, password),
		chromedp.Submit(`form.login`),
		chromedp.WaitVisible(`#overview`),
		chromedp.Navigate(base+"/events?status=delivered"),
		chromedp.WaitVisible(`table.events`),
		chromedp.Text(`table.events`, &events),
		chromedp.Click(`//a[text()="`+id+`"]`),
		chromedp.WaitVisible(`.status.delivered`),
		chromedp.Text(`main`, &detail),
	)
	if err != nil {
		t.Fatalf("browser: %v\nserver:\n%s", err, serverOut)
	}
	if !strings.Contains(events, id) || !strings.Contains(detail, "sink") {
		t.Fatalf("the page does not show %s delivered to the sink:\n%s\n%s", id, events, detail)
	}
}

// startInTerminal starts cmd as a person would in a terminal of their
// own, its output captured, and stops it at the end of the test as they
// would: Ctrl-C, then a kill if it has not ended within 15 s.
func startInTerminal(t *testing.T, cmd *exec.Cmd) *output {
	t.Helper()
	var out output
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return &out
}
