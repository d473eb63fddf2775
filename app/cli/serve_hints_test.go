package cli

import (
	"fmt"
	"testing"
)

// The start line tells how to look after hookbox where it runs: the
// unit's commands under systemd, the foreground ones elsewhere.
func TestRunHints(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	const system = "0::/system.slice/hookbox.service\n"
	for _, tc := range []struct {
		name   string
		vars   map[string]string
		cgroup string
		want   []any
	}{
		{"Laptop", nil, "0::/user.slice/user-1000.slice/session-2.scope\n",
			[]any{"stop", "Ctrl-C", "reload", "hookbox reload (or kill -HUP 4242)", "log", "stderr"}},
		{"Systemd", map[string]string{"INVOCATION_ID": "0a1b"}, system,
			[]any{"status", "systemctl status hookbox", "reload", "systemctl reload hookbox", "log", "journalctl -u hookbox"}},
		{"NotifySocket", map[string]string{"NOTIFY_SOCKET": "/run/systemd/notify"}, system,
			[]any{"status", "systemctl status hookbox", "reload", "systemctl reload hookbox", "log", "journalctl -u hookbox"}},
		{"OtherUnitName", map[string]string{"INVOCATION_ID": "0a1b"}, "0::/system.slice/webhooks.service\n",
			[]any{"status", "systemctl status webhooks", "reload", "systemctl reload webhooks", "log", "journalctl -u webhooks"}},
		{"UserUnit", map[string]string{"INVOCATION_ID": "0a1b"}, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/hb.service\n",
			[]any{"status", "systemctl --user status hb", "reload", "systemctl --user reload hb", "log", "journalctl --user -u hb"}},
		{"CgroupUnknown", map[string]string{"INVOCATION_ID": "0a1b"}, "",
			[]any{"status", "systemctl status hookbox", "reload", "systemctl reload hookbox", "log", "journalctl -u hookbox"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := fmt.Sprint(runHints(env(tc.vars), tc.cgroup, 4242)), fmt.Sprint(tc.want); got != want {
				t.Errorf("runHints: %s, want %s", got, want)
			}
		})
	}
}
