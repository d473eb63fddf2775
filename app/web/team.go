// The admin API of team access: the audit log, users and tokens. Changes
// go through access.Service, which records them in the audit log itself.

package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/access"
)

func (s *Server) routeTeam(r fiber.Router) {
	s.route(r, "/api/v1", fiber.MethodGet, "/audit", s.handleAudit)
	s.route(r, "/api/v1", fiber.MethodGet, "/users", s.handleUsers)
	s.route(r, "/api/v1", fiber.MethodPost, "/users", s.handleAddUser)
	s.route(r, "/api/v1", fiber.MethodDelete, "/users/:name", s.handleRemoveUser)
	s.route(r, "/api/v1", fiber.MethodPost, "/users/:name/role", s.handleSetRole)
	s.route(r, "/api/v1", fiber.MethodPost, "/users/:name/password", s.handleSetPassword)
	s.route(r, "/api/v1", fiber.MethodGet, "/tokens", s.handleTokens)
	s.route(r, "/api/v1", fiber.MethodPost, "/tokens", s.handleCreateToken)
	s.route(r, "/api/v1", fiber.MethodDelete, "/tokens/:name", s.handleRevokeToken)
}

// auditJSON is one audit entry as the API answers it.
type auditJSON struct {
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Via    string    `json:"via"`
	From   string    `json:"from"`
	Action string    `json:"action"`
	Target string    `json:"target,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Result string    `json:"result"`
}

// auditPage is GET /api/v1/audit's answer; next_before asks for the next
// page (absent on the last).
type auditPage struct {
	Items      []auditJSON `json:"items"`
	NextBefore uint64      `json:"next_before,omitempty"`
}

// AuditQueryOf reads an audit query's filters: actor, action, result,
// since, until (RFC 3339, a date, or a duration back from now), before
// and limit.
func AuditQueryOf(get func(string) string, now time.Time) (app.AuditQuery, error) {
	q := app.AuditQuery{Actor: get("actor"), Action: get("action"), Result: get("result")}
	var err error
	if q.Since, err = ParseSince("since", get("since"), now); err != nil {
		return q, err
	}
	if q.Until, err = ParseSince("until", get("until"), now); err != nil {
		return q, err
	}
	for _, f := range []struct {
		name string
		to   func(uint64)
	}{{"before", func(v uint64) { q.Before = v }}, {"limit", func(v uint64) { q.Limit = int(min(v, app.MaxAuditLimit)) }}} {
		if v := get(f.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return q, app.Errorf(app.EINVALID, "%s: %q is not a whole number", f.name, v)
			}
			f.to(n)
		}
	}
	return q, nil
}

func (s *Server) handleAudit(c *fiber.Ctx) error {
	q, err := AuditQueryOf(func(k string) string { return c.Query(k) }, s.deps.Now())
	if err != nil {
		return s.sendError(c, err)
	}
	entries, err := s.deps.Access.Audit(c.UserContext(), q)
	if err != nil {
		return s.storeError(c, err)
	}
	p := auditPage{Items: make([]auditJSON, len(entries))}
	for i, e := range entries {
		p.Items[i] = auditJSON{Seq: e.Seq, At: e.At.UTC(), Actor: e.Actor, Via: e.Via, From: e.From, Action: e.Action,
			Target: e.Target, Detail: e.Detail, Result: e.Result}
	}
	if len(entries) == q.PageLimit() {
		p.NextBefore = entries[len(entries)-1].Seq
	}
	return c.JSON(p)
}

// userJSON is a user as the API answers it: never its hash.
type userJSON struct {
	Name     string     `json:"name"`
	Role     string     `json:"role"`
	Created  *time.Time `json:"created"`
	Changed  *time.Time `json:"changed"`
	InConfig bool       `json:"in_config,omitempty"`
}

// tokenJSON is a token as the API answers it: never its hash.
type tokenJSON struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Created   time.Time  `json:"created"`
	CreatedBy string     `json:"created_by"`
	LastUsed  *time.Time `json:"last_used"`
	Expires   *time.Time `json:"expires"`
	Expired   bool       `json:"expired"`
}

func (s *Server) handleUsers(c *fiber.Ctx) error {
	users := s.deps.Access.Users()
	out := make([]userJSON, len(users))
	for i, u := range users {
		out[i] = userJSON{Name: u.Name, Role: u.Role.String(), Created: timeOrNil(u.Created), Changed: timeOrNil(u.Changed),
			InConfig: s.deps.Access.PasswordInConfig(u.Name)}
	}
	return c.JSON(fiber.Map{"users": out})
}

func (s *Server) handleTokens(c *fiber.Ctx) error {
	tokens := s.deps.Access.Tokens()
	now := s.deps.Now()
	out := make([]tokenJSON, len(tokens))
	for i, t := range tokens {
		out[i] = tokenJSON{Name: t.Name, Role: t.Role.String(), Created: t.Created.UTC(), CreatedBy: t.CreatedBy,
			LastUsed: timeOrNil(t.LastUsed), Expires: timeOrNil(t.Expires), Expired: t.Expired(now)}
	}
	return c.JSON(fiber.Map{"tokens": out})
}

// newUserJSON is POST /api/v1/users's body.
type newUserJSON struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
}

func (s *Server) handleAddUser(c *fiber.Ctx) error {
	var in newUserJSON
	if err := decodeBody(c, &in); err != nil {
		return s.sendError(c, err)
	}
	pw, generated, err := s.AddUser(c, in.Name, in.Role, in.Password)
	if err != nil {
		return s.accessError(c, err)
	}
	out := fiber.Map{"name": in.Name, "role": in.Role}
	if generated {
		out["password"] = pw // shown once, never kept
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

// AddUser adds a user through Access for c's identity; with no password
// given one is generated and returned (generated true).
func (s *Server) AddUser(c *fiber.Ctx, name, roleName, pw string) (string, bool, error) {
	role, err := app.ParseRole(roleName)
	if err != nil {
		return "", false, err
	}
	generated := pw == ""
	if generated {
		pw = access.GeneratePassword()
	}
	hash, err := access.HashPassword(pw)
	if err != nil {
		return "", false, app.Errorf(app.EINVALID, "%v", err)
	}
	if err := s.deps.Access.AddUser(c.UserContext(), s.who(c), name, role, hash); err != nil {
		return "", false, err
	}
	return pw, generated, nil
}

func (s *Server) handleRemoveUser(c *fiber.Ctx) error {
	name := c.Params("name")
	if err := s.deps.Access.RemoveUser(c.UserContext(), s.who(c), name); err != nil {
		return s.accessError(c, err)
	}
	return c.JSON(fiber.Map{"name": name, "removed": true})
}

func (s *Server) handleSetRole(c *fiber.Ctx) error {
	var in struct {
		Role string `json:"role"`
	}
	if err := decodeBody(c, &in); err != nil {
		return s.sendError(c, err)
	}
	role, err := app.ParseRole(in.Role)
	if err != nil {
		return s.sendError(c, err)
	}
	name := c.Params("name")
	if err := s.deps.Access.SetRole(c.UserContext(), s.who(c), name, role); err != nil {
		return s.accessError(c, err)
	}
	return c.JSON(fiber.Map{"name": name, "role": role.String()})
}

func (s *Server) handleSetPassword(c *fiber.Ctx) error {
	var in struct {
		Password string `json:"password"`
	}
	if err := decodeBody(c, &in); err != nil {
		return s.sendError(c, err)
	}
	hash, err := access.HashPassword(in.Password)
	if err != nil {
		return s.sendError(c, app.Errorf(app.EINVALID, "%v", err))
	}
	name := c.Params("name")
	if err := s.deps.Access.SetPassword(c.UserContext(), s.who(c), name, hash); err != nil {
		return s.accessError(c, err)
	}
	return c.JSON(fiber.Map{"name": name, "password_changed": true})
}

// newTokenJSON is POST /api/v1/tokens's body.
type newTokenJSON struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Expires string `json:"expires"`
}

func (s *Server) handleCreateToken(c *fiber.Ctx) error {
	var in newTokenJSON
	if err := decodeBody(c, &in); err != nil {
		return s.sendError(c, err)
	}
	secret, err := s.CreateToken(c, in.Name, in.Role, in.Expires)
	if err != nil {
		return s.accessError(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"name": in.Name, "role": in.Role, "token": secret})
}

// CreateToken creates a token through Access for c's identity and returns
// its secret (shown once).
func (s *Server) CreateToken(c *fiber.Ctx, name, roleName, expires string) (string, error) {
	role, err := app.ParseRole(roleName)
	if err != nil {
		return "", err
	}
	ttl, err := app.ParseExpiry(strings.TrimSpace(expires))
	if err != nil {
		return "", err
	}
	return s.deps.Access.CreateToken(c.UserContext(), s.who(c), name, role, ttl)
}

func (s *Server) handleRevokeToken(c *fiber.Ctx) error {
	name := c.Params("name")
	if err := s.deps.Access.RevokeToken(c.UserContext(), s.who(c), name); err != nil {
		return s.accessError(c, err)
	}
	return c.JSON(fiber.Map{"name": name, "revoked": true})
}

// accessError answers a failed change of users or tokens: the domain's
// errors as they are, anything else as storeError does.
func (s *Server) accessError(c *fiber.Ctx, err error) error {
	if app.ErrorCode(err) != app.EINTERNAL {
		return s.sendError(c, err)
	}
	return s.storeError(c, err)
}
