package cli

import (
	"net"
	"slices"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/systemd"
)

func TestSameAddr(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"443", ":443", true},
		{"[::]:443", ":443", true},
		{"0.0.0.0:443", "[::]:443", true},
		{"127.0.0.1:8080", "localhost:8080", true},
		{"127.0.0.1:8080", "127.0.0.1:8081", false},
		{"127.0.0.1:8080", ":8080", false},
		{"10.0.0.5:443", "0.0.0.0:443", false},
	} {
		if got := sameAddr(tc.a, tc.b); got != tc.want {
			t.Errorf("sameAddr(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// check and serve say where the socket unit and the config disagree:
// the socket is served, the config's address is not.
func TestSocketDisagreements(t *testing.T) {
	plain := app.ServerConfig{Listen: "127.0.0.1:8080"}
	acme := app.ServerConfig{Listen: ":443", HTTPListen: ":80"}
	for _, tc := range []struct {
		name     string
		listens  []string
		s        app.ServerConfig
		wantHTTP bool
		want     []string // words of each note, in order
	}{
		{"agree", []string{"127.0.0.1:8080"}, plain, false, nil},
		{"another port", []string{"127.0.0.1:9090"}, plain, false, []string{"listens on 127.0.0.1:9090 but server.listen is 127.0.0.1:8080"}},
		{"domain, both", []string{"443", "80"}, acme, true, nil},
		{"domain, no :80", []string{"443"}, acme, true, []string{"no socket for server.http_listen :80"}},
		{"domain, :8080 for :80", []string{"443", "8080"}, acme, true, []string{"second socket is 8080 but server.http_listen is :80"}},
		{"an extra socket", []string{"127.0.0.1:8080", "80"}, plain, false, []string{"also listens on 80"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := socketDisagreements(tc.listens, tc.s, tc.wantHTTP)
			if len(got) != len(tc.want) {
				t.Fatalf("notes %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("note %q does not say %q", got[i], w)
				}
			}
		})
	}
}

func TestUnitListens(t *testing.T) {
	unit := "[Socket]\nListenStream=443\nFileDescriptorName=hookbox\n ListenStream = 80\nBacklog=4096\n# ListenStream=1\n"
	if got, want := unitListens(unit), []string{"443", "80"}; !slices.Equal(got, want) {
		t.Fatalf("unitListens = %q, want %q", got, want)
	}
}

// Sockets sort by name first ("http" is ACME's), then by address.
func TestSortSockets(t *testing.T) {
	listen := func(name string) systemd.Socket {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return systemd.Socket{Name: name, Listener: ln}
	}
	a, b := listen("hookbox"), listen("http")
	s := app.ServerConfig{Listen: a.Listener.Addr().String(), HTTPListen: b.Listener.Addr().String()}
	p := sortSockets([]systemd.Socket{b, a}, s, true)
	if p.main != a.Listener || p.http != b.Listener || len(p.notes) != 0 {
		t.Fatalf("main %v http %v notes %q", p.main.Addr(), p.http, p.notes)
	}
	// Without names, by address: the one at http_listen is the http one.
	a.Name, b.Name = "", ""
	p = sortSockets([]systemd.Socket{b, a}, s, true)
	if p.main != a.Listener || p.http != b.Listener {
		t.Fatalf("by address: main %v http %v", p.main.Addr(), p.http.Addr())
	}
	// Plain HTTP: one socket, whatever its name; a second is closed.
	c := listen("")
	p = sortSockets([]systemd.Socket{a, c}, app.ServerConfig{Listen: s.Listen}, false)
	if p.main != a.Listener || p.http != nil || len(p.notes) != 1 || !strings.Contains(p.notes[0], "does not use") {
		t.Fatalf("plain: main %v http %v notes %q", p.main.Addr(), p.http, p.notes)
	}
	if _, err := c.Listener.Accept(); err == nil {
		t.Fatal("the socket not used is still open")
	}
}
