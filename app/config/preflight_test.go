package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/app/config"
)

func TestCheckDataDir(t *testing.T) {
	t.Run("OKCreatable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		if err := config.CheckDataDir(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
			t.Fatal("check left the directories it tried behind")
		}
	})
	t.Run("OKExisting", func(t *testing.T) {
		dir := t.TempDir()
		if err := config.CheckDataDir(dir); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("check left %v behind", ents)
		}
	})
	t.Run("ErrProc", func(t *testing.T) {
		if _, err := os.Stat("/proc/self"); err != nil {
			t.Skip("no /proc")
		}
		err := config.CheckDataDir("/proc/hookbox")
		if err == nil || !strings.Contains(err.Error(), "cannot create /proc/hookbox") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrFile", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o600)
		if err := config.CheckDataDir(f); err == nil {
			t.Fatal("a file was taken for a data dir")
		}
	})
	t.Run("ErrNotWritable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes anywhere the mode bits forbid")
		}
		dir := t.TempDir()
		os.Chmod(dir, 0o500)
		defer os.Chmod(dir, 0o700)
		if err := config.CheckDataDir(dir); err == nil || !strings.Contains(err.Error(), "cannot write in") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestConfig_PasteURL(t *testing.T) {
	for _, tc := range []struct {
		server string
		want   string
		public bool
	}{
		{`public_url = "https://hooks.example.com"`, "https://hooks.example.com/in/gh", true},
		{`listen = "127.0.0.1:9999"`, "http://127.0.0.1:9999/in/gh", false},
		{`listen = "0.0.0.0:8080"`, "http://127.0.0.1:8080/in/gh", false},
		{`listen = ":8080"`, "http://127.0.0.1:8080/in/gh", false},
	} {
		cfg, err := config.Parse("c.toml", "[server]\n"+tc.server+"\n"+pathsSource, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		got, public := cfg.PasteURL(cfg.SourceByName("gh"))
		if got != tc.want || public != tc.public {
			t.Errorf("%s: %q, %v; want %q, %v", tc.server, got, public, tc.want, tc.public)
		}
	}
	if err := config.CheckListen("127.0.0.1:no-such-port"); err == nil {
		t.Error("CheckListen took an unknown port name")
	}
}
