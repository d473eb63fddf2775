package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
	"hookbox/storage/bboltstore"
)

// serviceUser is a Unix user made for one test: what the service account
// hookbox runs as is to the root commands an administrator runs.
type serviceUser struct {
	name     string
	uid, gid int
}

var userSeq atomic.Int32

// newServiceUser creates the user hbrace<pid>[-n] with useradd and removes
// it when the test ends. It needs root (CI runs as root): elsewhere the
// test is skipped, and so when useradd is missing, except under CI=true,
// where a root that cannot make a user fails the test.
func newServiceUser(t *testing.T) serviceUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to create a second Unix user that plays the service account (CI runs the tests as root)")
	}
	ci := os.Getenv("CI") == "true"
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		if ci {
			t.Fatalf("running as root under CI=true, but useradd is missing: %v", err)
		}
		t.Skipf("useradd is missing (%v): cannot create the second Unix user this test needs", err)
	}
	name := fmt.Sprintf("hbrace%d", os.Getpid())
	if n := userSeq.Add(1); n > 1 {
		name += "-" + strconv.Itoa(int(n))
	}
	if out, err := exec.Command(useradd, "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		if ci {
			t.Fatalf("useradd %s: %v\n%s", name, err, out)
		}
		t.Skipf("useradd %s failed (%v), so there is no second Unix user for this test: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return serviceUser{name: name, uid: uid, gid: gid}
}

// as makes cmd run as u.
func (u serviceUser) as(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	return cmd
}

// copyExecutable copies the program at from to to, mode 0755, so that a
// user without access to the build's directories can run it.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// attackEnv names the directories the attacker swaps names in; with it set,
// TestLocalUserAttacker is the attacker rather than a test.
const attackEnv = "HOOKBOX_TEST_ATTACK_DIRS"

// TestLocalUserAttacker is not a test: TestLocalUser_RootCommands runs the
// test binary as the service user with this test selected and attackEnv
// set, and it then swaps, in a tight loop until killed, every name in
// those directories (only the temporaries', starting with ".", when
// HOOKBOX_TEST_ATTACK_ALL is not 1) for a symbolic link: to the victim,
// or to a name that does not exist beside it, in turn.
func TestLocalUserAttacker(t *testing.T) {
	dirs := os.Getenv(attackEnv)
	if dirs == "" {
		t.Skip("the attacker TestLocalUser_RootCommands runs as its service user")
	}
	victim := os.Getenv("HOOKBOX_TEST_ATTACK_VICTIM")
	all := os.Getenv("HOOKBOX_TEST_ATTACK_ALL") == "1"
	fmt.Println("attacking") // the test waits for this line
	for i := 0; ; i++ {
		for _, dir := range strings.Split(dirs, ":") {
			d, err := os.Open(dir)
			if err != nil {
				continue
			}
			names, _ := d.Readdirnames(-1)
			d.Close()
			for _, n := range names {
				if strings.HasPrefix(n, ".attack-") || !all && !strings.HasPrefix(n, ".") {
					continue
				}
				p := filepath.Join(dir, n)
				fi, err := os.Lstat(p)
				if err != nil {
					continue
				}
				target := victim
				if i%2 == 1 {
					target = filepath.Join(filepath.Dir(victim), "absent-"+strconv.Itoa(i))
				}
				switch {
				case fi.IsDir() && strings.HasPrefix(n, "."):
					// A directory root made (its private one for a new
					// file): moved away, a link to the victim's directory
					// in its place.
					os.Rename(p, filepath.Join(dir, ".attack-moved-"+strconv.Itoa(i)))
					target = filepath.Dir(victim)
				case !fi.Mode().IsRegular() && fi.Mode()&os.ModeNamedPipe == 0:
					continue // a directory of its own, or already a link
				}
				tmp := filepath.Join(dir, ".attack-"+strconv.Itoa(i))
				if os.Symlink(target, tmp) == nil && os.Rename(tmp, p) != nil {
					os.Remove(tmp)
				}
			}
		}
	}
}

// attacker is a running TestLocalUserAttacker.
type attacker struct{ cmd *exec.Cmd }

func startAttacker(t *testing.T, u serviceUser, bin, victim string, all bool, dirs ...string) *attacker {
	t.Helper()
	cmd := u.as(exec.Command(bin, "-test.run=^TestLocalUserAttacker$", "-test.count=1"))
	cmd.Env = append(os.Environ(), attackEnv+"="+strings.Join(dirs, ":"), "HOOKBOX_TEST_ATTACK_VICTIM="+victim)
	if all {
		cmd.Env = append(cmd.Env, "HOOKBOX_TEST_ATTACK_ALL=1")
	}
	cmd.Dir = filepath.Dir(bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &attacker{cmd: cmd}
	t.Cleanup(a.stop)
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.Contains(line, "attacking") {
		a.stop()
		t.Fatalf("the attacker did not start: %q", line)
	}
	go io.Copy(io.Discard, out)
	return a
}

// stop kills the attacker and waits for it; a second call does nothing.
func (a *attacker) stop() {
	if a.cmd.ProcessState == nil {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	}
}

// userServer is hookbox serve running as the service user.
type userServer struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
}

func (s *userServer) logText() string { s.mu.Lock(); defer s.mu.Unlock(); return s.log.String() }

func startUserServer(t *testing.T, u serviceUser, bin, config string) *userServer {
	t.Helper()
	s := &userServer{done: make(chan struct{})}
	s.cmd = u.as(exec.Command(bin, "serve", "-config", config))
	s.cmd.Dir = filepath.Dir(bin)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if strings.Contains(sc.Text(), "hookbox started") {
				close(started)
			}
		}
	}()
	t.Cleanup(s.stop)
	select {
	case <-started:
	case <-s.done:
		s.cmd.Wait()
		t.Fatalf("serve as %s exited:\n%s", u.name, s.logText())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve as %s did not start:\n%s", u.name, s.logText())
	}
	return s
}

// stop ends the server (SIGTERM) and waits for it; a second call does nothing.
func (s *userServer) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
	}
	s.cmd.Wait()
}

// raceBed is the scene of TestLocalUser_RootCommands: a data directory the
// service user owns, and a victim it must never get.
type raceBed struct {
	u          serviceUser
	base, data string
	backups    string
	victimDir  string
	victim     string
	victimData []byte
	pristine   string // a good data file, the service user's, outside its reach
	bin        string // hookbox, runnable by the service user
	attackBin  string // this test binary, runnable by the service user
	config     string
}

func newRaceBed(t *testing.T) *raceBed {
	t.Helper()
	u := newServiceUser(t)
	b := &raceBed{u: u, base: t.TempDir()}
	// The service user must reach its data directory and the programs
	// (t.TempDir's directories are 0700).
	for _, d := range []string{filepath.Dir(b.base), b.base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.data = filepath.Join(b.base, "data")
	b.backups = filepath.Join(b.data, "backups")
	b.victimDir = filepath.Join(b.base, "victim")
	b.victim = filepath.Join(b.victimDir, "secret.db")
	for _, d := range []string{b.data, b.backups} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(b.victimDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The victim is a sound hookbox data file of root's (0600): a restore
	// that could be pointed at it would check it, pass it, and hand a copy
	// to the service user; an open that followed a link to it would write
	// to it.
	made := t.TempDir()
	db, err := bboltstore.Open(made)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetMeta(context.Background(), "secret", []byte("root's")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b.victimData, err = os.ReadFile(filepath.Join(made, bboltstore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.victim, b.victimData, 0o600); err != nil {
		t.Fatal(err)
	}
	b.bin = filepath.Join(b.base, "hookbox")
	copyExecutable(t, clitest.Shipped(t), b.bin)
	b.attackBin = filepath.Join(b.base, "attacker.test")
	copyExecutable(t, os.Args[0], b.attackBin)
	b.config = filepath.Join(b.base, "config.toml")
	text := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%d\"\ndata_dir = %q\n\n"+
		"[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n", freePort(t), b.data)
	if err := os.WriteFile(b.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// A data file of the service user's own making, and a copy of it in
	// the backup directory (where the scheduled backups are) to restore.
	startUserServer(t, u, b.bin, b.config).stop()
	b.pristine = filepath.Join(b.base, "pristine.db")
	good, err := os.ReadFile(filepath.Join(b.data, bboltstore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.pristine, good, 0o600); err != nil {
		t.Fatal(err)
	}
	b.putBackup(t)
	return b
}

// putBackup (re)writes the backup the restores take, as the service user's.
func (b *raceBed) putBackup(t *testing.T) {
	t.Helper()
	good, err := os.ReadFile(b.pristine)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(b.backups, "good.db")
	os.Remove(p)
	if err := os.WriteFile(p, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, b.u.uid, b.u.gid); err != nil {
		t.Fatal(err)
	}
}

// root runs hookbox as root (this test's user) with args and stdin.
func (b *raceBed) root(stdin string, args ...string) (int, string) {
	return b.rootEnv(nil, stdin, args...)
}

// rootEnv is root with env added to the environment.
func (b *raceBed) rootEnv(env []string, stdin string, args ...string) (int, string) {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return code, string(out)
}

// victimIntact says what happened to the victim and beside it ("" when
// nothing did).
func (b *raceBed) victimIntact() string {
	fi, err := os.Lstat(b.victim)
	if err != nil {
		return fmt.Sprintf("the victim: %v", err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != 0 || fi.Mode() != 0o600 {
		return fmt.Sprintf("the victim %s is now %d:%d %v (want 0:0 -rw-------)", b.victim, st.Uid, st.Gid, fi.Mode())
	}
	got, err := os.ReadFile(b.victim)
	if err != nil {
		return err.Error()
	}
	if !bytes.Equal(got, b.victimData) {
		return fmt.Sprintf("the victim %s was written to", b.victim)
	}
	names, _ := os.ReadDir(b.victimDir)
	if len(names) != 1 {
		var s []string
		for _, n := range names {
			s = append(s, n.Name())
		}
		return fmt.Sprintf("root made files beside the victim, where links pointed: %v", s)
	}
	return ""
}

// dataFileSound says what is wrong with the data file after a restore
// ("" when nothing): a link, a file not the service user's, or a copy
// of the victim.
func (b *raceBed) dataFileSound() string {
	p := filepath.Join(b.data, bboltstore.FileName)
	fi, err := os.Lstat(p)
	if err != nil {
		return err.Error()
	}
	if !fi.Mode().IsRegular() {
		target, _ := os.Readlink(p)
		return fmt.Sprintf("%s is not a regular file but %v (→ %s)", p, fi.Mode(), target)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != b.u.uid {
		return fmt.Sprintf("%s belongs to uid %d, not the service user's %d", p, st.Uid, b.u.uid)
	}
	if got, _ := os.ReadFile(p); bytes.Equal(got, b.victimData) {
		return fmt.Sprintf("%s is a copy of the victim: root's file handed to the service user", p)
	}
	return ""
}

// repair puts the data directory back as the service user had it: links
// gone, the data file a copy of the pristine one, the backup in place.
func (b *raceBed) repair(t *testing.T) {
	t.Helper()
	for _, dir := range []string{b.data, b.backups} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Type()&os.ModeSymlink != 0 || strings.HasPrefix(e.Name(), ".") {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	p := filepath.Join(b.data, bboltstore.FileName)
	if _, err := os.Lstat(p); err != nil {
		good, _ := os.ReadFile(b.pristine)
		if err := os.WriteFile(p, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{bboltstore.FileName, bboltstore.LockName, bboltstore.MarkerName} {
		os.Lchown(filepath.Join(b.data, n), b.u.uid, b.u.gid)
	}
	b.putBackup(t)
}

// TestLocalUser_RootCommands runs the race of issue 24, finding 1, for
// real: the service user (a second Unix user, who owns the data
// directory) swaps every name in the data directory for symbolic links to
// a root-owned 0600 file, in a tight loop, while root runs the commands
// that write into that directory (passwd to a running server and to a
// stopped one, backup into the backup directory, restore, check), many
// times. Afterwards the victim is still
// root's, 0600 and unchanged, nothing was made where the links pointed,
// and every restore that succeeded left the data file a regular file of
// the service user's that is not a copy of the victim.
// HOOKBOX_TEST_RACE_ROUNDS sets the rounds (default 3), and
// HOOKBOX_TEST_RACE_PHASES=running,stopped,all,paths picks phases (default
// all four; paths turns the backup directory into a link to the victim's).
func TestLocalUser_RootCommands(t *testing.T) {
	b := newRaceBed(t)
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("HOOKBOX_TEST_RACE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	phases := os.Getenv("HOOKBOX_TEST_RACE_PHASES") // running,stopped,all,paths (the default: all four)
	phase := func(name string) bool { return phases == "" || strings.Contains(phases, name) }
	commands := 0
	succeeded := map[string]int{} // what got through under attack: a race the commands never reach proves nothing
	check := func(what, out string) {
		t.Helper()
		commands++
		if why := b.victimIntact(); why != "" {
			t.Fatalf("after %d root commands, %s: %s\n%s", commands, what, why, out)
		}
	}
	for round := range rounds {
		// A running server (the service user's) takes a new password
		// through the hand-off file root's passwd writes.
		for i := range 3 {
			if !phase("running") {
				break
			}
			srv := startUserServer(t, b.u, b.bin, b.config)
			a := startAttacker(t, b.u, b.attackBin, b.victim, false, b.data, b.backups)
			code, out := b.root(fmt.Sprintf("password-%d-%d\n", round, i), "passwd", "-config", b.config)
			check("passwd to the running server", out)
			if code == 0 {
				succeeded["passwd to the running server"]++
				// With the password it set, a backup into the service
				// user's backup directory.
				out := filepath.Join(b.backups, "by-root.db")
				code, msg := b.rootEnv([]string{"HOOKBOX_PASSWORD=" + fmt.Sprintf("password-%d-%d", round, i)}, "",
					"backup", "-config", b.config, "-o", out)
				check("backup into the backup directory", msg)
				if code == 0 {
					succeeded["backup"]++
					if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
						t.Fatalf("after %d root commands, backup succeeded, but %s is not a regular file: %v", commands, out, err)
					}
				}
			}
			a.stop()
			srv.stop()
			b.repair(t)
		}

		// The server stopped: restore from the backup directory, passwd
		// straight into the data file, check. The attacker swaps the
		// temporaries' names only, so that the commands get as far as
		// handing their files over.
		a := startAttacker(t, b.u, b.attackBin, b.victim, false, b.data, b.backups)
		for i := range 6 {
			if !phase("stopped") {
				break
			}
			code, out := b.root("", "restore", "-config", b.config, filepath.Join(b.backups, "good.db"))
			check("restore", out)
			if code == 0 {
				succeeded["restore"]++
				if why := b.dataFileSound(); why != "" {
					t.Fatalf("after %d root commands, restore succeeded, but %s\n%s", commands, why, out)
				}
			}
			code, out = b.root(fmt.Sprintf("password-%d-%d\n", round, i), "passwd", "-config", b.config)
			check("passwd to a stopped server", out)
			if code == 0 {
				succeeded["passwd to a stopped server"]++
			}
			code, out = b.root("", "check", "-config", b.config)
			check("check", out)
			if code == 0 {
				succeeded["check"]++
			}
		}
		a.stop()
		b.repair(t)

		// Every name, the data file, its lock and the backup included:
		// the commands may fail, never follow a link.
		a = startAttacker(t, b.u, b.attackBin, b.victim, true, b.data, b.backups)
		for i := range 6 {
			if !phase("all") {
				break
			}
			_, out := b.root("", "restore", "-config", b.config, filepath.Join(b.backups, "good.db"))
			check("restore, every name swapped", out)
			_, out = b.root(fmt.Sprintf("password-%d-%d\n", round, i), "passwd", "-config", b.config)
			check("passwd to a stopped server, every name swapped", out)
			_, out = b.root("", "check", "-config", b.config)
			check("check, every name swapped", out)
		}
		a.stop()
		b.repair(t)
	}
	if phase("paths") {
		// No race needed for this one: the service user turns its backup
		// directory into a link to the victim's, and root backs up into
		// it and restores from it. A link in a directory the service user
		// owns is not followed (before, backup made a file beside the
		// victim).
		srv := startUserServer(t, b.u, b.bin, b.config)
		code, out := b.root("password-paths\n", "passwd", "-config", b.config)
		if code != 0 {
			t.Fatalf("passwd: %d %s", code, out)
		}
		real := b.backups + ".real"
		if err := os.Rename(b.backups, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(b.victimDir, b.backups); err != nil {
			t.Fatal(err)
		}
		os.Lchown(b.backups, b.u.uid, b.u.gid)
		code, out = b.rootEnv([]string{"HOOKBOX_PASSWORD=password-paths"}, "",
			"backup", "-config", b.config, "-o", filepath.Join(b.backups, "by-root.db"))
		check("backup through a link in the data directory", out)
		if code == 0 || !strings.Contains(out, "symbolic link") {
			t.Errorf("backup through a link the service user made: exit %d, %s", code, out)
		}
		srv.stop()
		code, out = b.root("", "restore", "-config", b.config, filepath.Join(b.backups, "secret.db"))
		check("restore through a link in the data directory", out)
		if code == 0 || !strings.Contains(out, "symbolic link") {
			t.Errorf("restore through a link the service user made: exit %d, %s", code, out)
		}
		if got, _ := os.ReadFile(filepath.Join(b.data, bboltstore.FileName)); bytes.Equal(got, b.victimData) {
			t.Error("restore copied the victim into the data directory")
		}
		os.Remove(b.backups)
		if err := os.Rename(real, b.backups); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d root commands raced, the victim intact; succeeded under attack: %v", commands, succeeded)
	for _, what := range []string{"passwd to the running server", "backup", "restore", "passwd to a stopped server", "check"} {
		if phase("running") && phase("stopped") && succeeded[what] == 0 {
			t.Errorf("%s never succeeded under attack: the race did not reach the code it is about", what)
		}
	}
}
