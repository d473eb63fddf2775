package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/app/config"
)

// LoadReach gives hookbox reload the address and the login of a file
// whose other tables have mistakes (the server names them); a mistake in
// [server], or TOML that does not parse, is an error as with Load.
func TestLoadReach(t *testing.T) {
	const good = `[server]
listen = "127.0.0.1:9123"

[status]
password_env = "PW"

[[source]]
name = "gh"
provider = "github"
secret = "s3cret"
`
	for _, tt := range []struct {
		name, file string
		wantErr    string
	}{
		{name: "Valid", file: good},
		{name: "MistakesElsewhere", file: good + "\n[[destination]]\nname = \"pos\"\nurl = \"ftp://x\"\nconcurency = 2\n"},
		{name: "MistakeInServer", file: strings.Replace(good, "listen =", "lisen =", 1), wantErr: "server.lisen: unknown key"},
		{name: "Syntax", file: good + "\n[[destination]\n", wantErr: "c.toml:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.LoadReach(path, env(map[string]string{"PW": "pw"}))
			if tt.wantErr != "" {
				if err == nil || cfg != nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadReach = %v, %v; want an error with %q", cfg, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Server.Listen != "127.0.0.1:9123" || cfg.Status.Password != "pw" || cfg.Status.User == "" {
				t.Errorf("server %+v, status user %q password %q; want the file's", cfg.Server, cfg.Status.User, cfg.Status.Password)
			}
			if _, err := config.Load(path, env(map[string]string{"PW": "pw"})); (err == nil) != (tt.name == "Valid") {
				t.Errorf("Load: %v", err)
			}
		})
	}
}
