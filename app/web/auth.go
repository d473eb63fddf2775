package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

// The status page's sessions are kept by the store (access.Sessions): the
// cookie holds the token, the store only its SHA-256, so a restart or a
// reload logs nobody out.
const (
	sessionCookie = "hookbox_session"
	// loginLogEvery throttles the log lines about failed and limited
	// logins; each line says how many it stands for.
	loginLogEvery = 10 * time.Second
)

// csrfOf is the CSRF token of the session of tok: derived from the
// session's token, so that nothing more is stored, and only the holder of
// the cookie can know it; the store's hash of the token does not give it.
func csrfOf(tok string) string {
	h := sha256.Sum256([]byte("hookbox csrf\x00" + tok))
	return hex.EncodeToString(h[:16])
}

// securityHeaders go on every page and API answer.
func (s *Server) securityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("X-Frame-Options", "DENY")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("Cache-Control", "no-store")
	if s.scheme(c) == "https" {
		c.Set("Strict-Transport-Security", "max-age=31536000")
	}
	return c.Next()
}

// Ways a request is authenticated, as the audit log names them.
const (
	viaSession = "session"
	viaBasic   = "basic"
	viaToken   = "token"
	viaForm    = "form" // the login form (only while logging in)
)

// authenticate finds who is calling: the Unix user on the local socket
// (localsock.go), a session cookie (browser), a Bearer token (scripts, on
// /api/v1 and /metrics only) or HTTP Basic auth (CLI, scripts), the
// latter through the guard. A session or cached credential whose identity
// no longer holds (Access.Current) is dropped; a session the store cannot
// read is no login. It stores the session's CSRF token in c.Locals. When
// the guard limited the attempt,
// wait says when to retry. via is "" when nobody is logged in.
func (s *Server) authenticate(c *fiber.Ctx) (id app.Identity, via string, wait time.Duration) {
	if p, ok := localPeer(c); ok { // the local socket: the kernel named the caller
		return p.Identity(), viaSocket, 0
	}
	if tok := c.Cookies(sessionCookie); tok != "" {
		id, ok, err := s.sessions.Find(c.UserContext(), tok)
		if err != nil {
			s.Logger.Warn("session not read", slog.Any("error", err))
		}
		if ok {
			c.Locals("csrf", csrfOf(tok))
			c.Locals("session", tok)
			return id, viaSession, 0
		}
	}
	h := c.Get(fiber.HeaderAuthorization)
	if secret, ok := bearer(h); ok {
		if !isAPI(c) { // never on the pages
			return app.Identity{}, "", 0
		}
		if id, ok := s.deps.Access.CheckToken(secret); ok {
			return id, viaToken, 0
		}
		return app.Identity{}, "", 0
	}
	u, p, ok := basicAuth(h)
	if !ok {
		return app.Identity{}, "", 0
	}
	id, ok, wait = s.checkPassword(c, u, p, viaBasic)
	if !ok {
		return app.Identity{}, "", wait
	}
	return id, viaBasic, 0
}

// bearer returns the secret of an "Authorization: Bearer" header.
func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

// checkPassword runs the guard's check and logs failures and limits,
// throttled, with the client's address; wait is set when the attempt was
// limited. A password really checked (not limited, not a cached Basic
// credential) is recorded in the audit log, right or wrong.
func (s *Server) checkPassword(c *fiber.Ctx, user, password, via string) (id app.Identity, ok bool, wait time.Duration) {
	client := s.client(c)
	v, id, checked, wait := s.guard.check(client, user, password, via == viaBasic)
	if checked {
		auditVia := via
		if via == viaForm {
			auditVia = viaSession
		}
		// The name is the request's, whoever it names: cut and cleaned
		// before the audit log and the page see it.
		e := app.Who{Actor: app.CleanName(user), Via: auditVia, From: client.String()}.Entry(app.AuditLogin, "", "", nil)
		if v != granted {
			e.Result, e.Detail = app.AuditFailed, "wrong user or password"
		} else {
			e.Actor = id.Actor()
		}
		s.deps.Access.Record(c.UserContext(), e)
	}
	switch v {
	case granted:
		return id, true, 0
	case limited:
		if ok, held := s.limitedLog.Allow(s.deps.Now(), loginLogEvery); ok {
			s.Logger.Warn("login attempt over the limit of failed logins: answered 429 without checking", "client", client.String(),
				"via", via, "limited_since_last_line", held)
		}
	default:
		if ok, held := s.failedLog.Allow(s.deps.Now(), loginLogEvery); ok {
			s.Logger.Warn("failed login", "client", client.String(), "via", via, "failed_since_last_line", held)
		}
	}
	return app.Identity{}, false, wait
}

// holdLimited delays the answer to an attempt the guard limited by
// LimitedDelay, sets its Retry-After and returns the seconds it says.
func (s *Server) holdLimited(c *fiber.Ctx, wait time.Duration) int {
	time.Sleep(s.deps.LimitedDelay)
	secs := max(1, int((wait+time.Second-1)/time.Second))
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	return secs
}

// requireAuth guards pages, the admin API and metrics. Without a login a
// page redirects to the login form and anything else answers 401 (429
// when the guard limited the attempt). A state change through a session
// must carry its CSRF token, from the form body or the X-CSRF-Token
// header; one through Basic auth or a token must not come from another
// site. The local socket needs neither: no browser reaches it.
func (s *Server) requireAuth(c *fiber.Ctx) error {
	id, via, wait := s.authenticate(c)
	if via == "" {
		if wait > 0 {
			secs := s.holdLimited(c, wait)
			return c.Status(fiber.StatusTooManyRequests).JSON(answer{Status: "error",
				Error: fmt.Sprintf("too many failed logins: retry in %d s", secs)})
		}
		if c.Method() == fiber.MethodGet && !isAPI(c) {
			return c.Redirect("/login?next="+url.QueryEscape(c.OriginalURL()), fiber.StatusSeeOther)
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="hookbox", charset="UTF-8"`)
		return c.Status(fiber.StatusUnauthorized).JSON(answer{Status: "error", Error: "login required"})
	}
	c.Locals("user", id.Name)
	c.Locals("identity", id)
	c.Locals("via", via)
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if via == viaSession {
			tok := c.Get("X-CSRF-Token")
			if tok == "" {
				tok = request.PostValue(c, "csrf")
			}
			want, _ := c.Locals("csrf").(string)
			if !equal(tok, want) {
				return s.sendError(c, app.Errorf(app.EFORBIDDEN, "missing or wrong CSRF token: reload the page and try again"))
			}
		} else if o := c.Get(fiber.HeaderOrigin); via != viaSocket && o != "" && !s.sameOrigin(c, o) {
			return s.sendError(c, app.Errorf(app.EFORBIDDEN, "cross-site request refused"))
		}
	}
	return c.Next()
}

// sameOrigin reports whether an Origin header names this server: the
// request's own scheme (TLS, or a trusted proxy's X-Forwarded-Proto; see
// scheme) with its Host, or the scheme and host of server.public_url. Host
// and port are compared with the scheme's default port filled in, so
// https://hooks.example is not http://hooks.example, nor another port.
func (s *Server) sameOrigin(c *fiber.Ctx, origin string) bool {
	o, ok := originOf(origin)
	if !ok {
		return false
	}
	if self, ok := originOf(s.scheme(c) + "://" + c.Hostname()); ok && o == self {
		return true
	}
	pub, ok := originOf(s.config().Server.PublicURL)
	return ok && o == pub
}

// originOf is the origin of an absolute http or https URL, as
// "scheme://host:port" in lower case with the default port written out;
// false for anything else ("null", another scheme, no host, user info).
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return "", false
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

func isAPI(c *fiber.Ctx) bool {
	p := c.Path()
	return len(p) >= 7 && p[:7] == "/api/v1" || p == "/metrics"
}

func (s *Server) handleLoginPage(c *fiber.Ctx) error {
	if _, via, _ := s.authenticate(c); via != "" {
		return c.Redirect("/", fiber.StatusSeeOther)
	}
	return s.ui.Login(c, fiber.StatusOK, "", c.Query("next"))
}

// handleLogin takes the login form's fields from the body only: a
// password or a redirect target in the query string is ignored.
func (s *Server) handleLogin(c *fiber.Ctx) error {
	user, pass, next := request.PostValue(c, "user"), request.PostValue(c, "password"), request.PostValue(c, "next")
	id, ok, wait := s.checkPassword(c, user, pass, viaForm)
	if !ok {
		if wait > 0 {
			secs := s.holdLimited(c, wait)
			return s.ui.Login(c, fiber.StatusTooManyRequests, fmt.Sprintf("Too many failed logins: try again in %d seconds.", secs), next)
		}
		return s.ui.Login(c, fiber.StatusUnauthorized, "Wrong user or password.", next)
	}
	tok, expires, err := s.sessions.Start(c.UserContext(), id)
	if err != nil {
		return s.storeError(c, err)
	}
	c.Cookie(&fiber.Cookie{Name: sessionCookie, Value: tok, Path: "/", HTTPOnly: true, SameSite: "Strict",
		Secure: s.scheme(c) == "https", Expires: expires})
	return c.Redirect(request.SafeNext(next), fiber.StatusSeeOther)
}

func (s *Server) handleLogout(c *fiber.Ctx) error {
	s.deps.Access.Record(c.UserContext(), s.who(c).Entry(app.AuditLogout, "", "", nil))
	if tok := c.Cookies(sessionCookie); tok != "" {
		if err := s.sessions.End(c.UserContext(), tok); err != nil {
			return s.storeError(c, err)
		}
	}
	c.ClearCookie(sessionCookie)
	return c.Redirect("/login", fiber.StatusSeeOther)
}
