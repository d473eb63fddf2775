package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// Sessions of the status page live in memory: a restart logs everyone out.
const (
	sessionCookie = "hookbox_session"
	sessionTTL    = 12 * time.Hour
	// loginDelay slows every failed login, so guessing is slow.
	loginDelay = time.Second
)

type session struct {
	user    string
	csrf    string
	expires time.Time
}

// sessions are keyed by the SHA-256 of their token, so that finding one
// compares digests, never the secret token itself, and the map holds no
// usable token.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func tokenKey(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return string(h[:])
}

func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (ss *sessions) create(user string, now time.Time) (string, *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, s := range ss.m { // drop expired ones while here
		if now.After(s.expires) {
			delete(ss.m, k)
		}
	}
	tok := newToken()
	s := &session{user: user, csrf: newToken(), expires: now.Add(sessionTTL)}
	ss.m[tokenKey(tok)] = s
	return tok, s
}

func (ss *sessions) get(tok string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	key := tokenKey(tok)
	s := ss.m[key]
	if s == nil || now.After(s.expires) {
		delete(ss.m, key)
		return nil
	}
	return s
}

func (ss *sessions) drop(tok string) {
	ss.mu.Lock()
	delete(ss.m, tokenKey(tok))
	ss.mu.Unlock()
}

// securityHeaders go on every page and API answer.
func securityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("X-Frame-Options", "DENY")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("Cache-Control", "no-store")
	if c.Protocol() == "https" {
		c.Set("Strict-Transport-Security", "max-age=31536000")
	}
	return c.Next()
}

// authenticate finds who is calling: a session cookie (browser) or HTTP
// Basic auth (CLI, scripts). It stores the session in c.Locals.
func (s *Server) authenticate(c *fiber.Ctx) (user string, viaSession bool) {
	if tok := c.Cookies(sessionCookie); tok != "" {
		if ss := s.sessions.get(tok, s.deps.Now()); ss != nil {
			c.Locals("csrf", ss.csrf)
			return ss.user, true
		}
	}
	if u, p, ok := basicAuth(c.Get(fiber.HeaderAuthorization)); ok && s.deps.Login(u, p) {
		return u, false
	}
	return "", false
}

// requireAuth guards pages, the admin API and metrics. Without a login a
// page redirects to the login form and anything else answers 401. A state
// change through a session must carry its CSRF token; one through Basic
// auth must not come from another site.
func (s *Server) requireAuth(c *fiber.Ctx) error {
	user, viaSession := s.authenticate(c)
	if user == "" {
		if c.Get(fiber.HeaderAuthorization) != "" {
			time.Sleep(s.deps.LoginDelay) // a wrong password, like at the login form: guessing stays slow
		}
		if c.Method() == fiber.MethodGet && !isAPI(c) {
			return c.Redirect("/login?next="+url.QueryEscape(c.OriginalURL()), fiber.StatusSeeOther)
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="hookbox", charset="UTF-8"`)
		return c.Status(fiber.StatusUnauthorized).JSON(answer{Status: "error", Error: "login required"})
	}
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if viaSession {
			tok := c.Get("X-CSRF-Token")
			if tok == "" {
				tok = c.FormValue("csrf")
			}
			want, _ := c.Locals("csrf").(string)
			if !equal(tok, want) {
				return s.sendError(c, app.Errorf(app.EFORBIDDEN, "missing or wrong CSRF token: reload the page and try again"))
			}
		} else if o := c.Get(fiber.HeaderOrigin); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != c.Hostname() {
				return s.sendError(c, app.Errorf(app.EFORBIDDEN, "cross-site request refused"))
			}
		}
	}
	return c.Next()
}

func isAPI(c *fiber.Ctx) bool {
	p := c.Path()
	return len(p) >= 7 && p[:7] == "/api/v1" || p == "/metrics"
}

func (s *Server) handleLoginPage(c *fiber.Ctx) error {
	if user, _ := s.authenticate(c); user != "" {
		return c.Redirect("/", fiber.StatusSeeOther)
	}
	return s.ui.Login(c, fiber.StatusOK, "")
}

func (s *Server) handleLogin(c *fiber.Ctx) error {
	user, pass := c.FormValue("user"), c.FormValue("password")
	if !s.deps.Login(user, pass) {
		time.Sleep(s.deps.LoginDelay)
		s.Logger.Warn("failed login", "ip", c.IP())
		return s.ui.Login(c, fiber.StatusUnauthorized, "Wrong user or password.")
	}
	tok, _ := s.sessions.create(user, s.deps.Now())
	c.Cookie(&fiber.Cookie{Name: sessionCookie, Value: tok, Path: "/", HTTPOnly: true, SameSite: "Strict",
		Secure: c.Protocol() == "https", Expires: s.deps.Now().Add(sessionTTL)})
	return c.Redirect(safeRedirect(c.FormValue("next")), fiber.StatusSeeOther)
}

func (s *Server) handleLogout(c *fiber.Ctx) error {
	s.sessions.drop(c.Cookies(sessionCookie))
	c.ClearCookie(sessionCookie)
	return c.Redirect("/login", fiber.StatusSeeOther)
}

// safeRedirect keeps a post-login redirect on this site.
func safeRedirect(n string) string {
	if len(n) == 0 || n[0] != '/' || len(n) > 1 && (n[1] == '/' || n[1] == '\\') {
		return "/"
	}
	return n
}
