package ui

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/request"
)

// teamRow is a token as the Team page shows it.
type teamToken struct {
	app.Token
	IsExpired bool
}

// team is the admin's Team page: users and tokens, and the forms that
// change them. msg reports the last change; secret is a generated
// password or a new token's secret, shown this once.
func (u *UI) team(c *fiber.Ctx) error { return u.renderTeam(c, fiber.StatusOK, "", "", "") }

func (u *UI) renderTeam(c *fiber.Ctx, status int, msg, bad, secret string) error {
	var roles []string
	for _, r := range app.Roles() {
		roles = append(roles, r.String())
	}
	data := map[string]any{"Msg": msg, "Bad": bad, "Secret": secret, "Roles": roles}
	if a := u.d.Access; a != nil {
		data["Users"] = a.Users()
		var toks []teamToken
		for _, t := range a.Tokens() {
			toks = append(toks, teamToken{Token: t, IsExpired: t.Expired(u.d.Now())})
		}
		data["Tokens"] = toks
		data["InConfig"] = a.PasswordInConfig
	}
	return u.render(c, status, "team", "Team", data)
}

// teamDone renders the Team page after a change: its error as a sentence
// (the server's status for it), or msg.
func (u *UI) teamDone(c *fiber.Ctx, err error, msg, secret string) error {
	if err != nil {
		status := fiber.StatusBadRequest
		switch app.ErrorCode(err) {
		case app.ENOTFOUND:
			status = fiber.StatusNotFound
		case app.ECONFLICT:
			status = fiber.StatusConflict
		case app.EFORBIDDEN:
			status = fiber.StatusForbidden
		case app.EINTERNAL, app.EUNAVAILABLE:
			return err
		}
		return u.renderTeam(c, status, "", app.ErrorMessage(err), "")
	}
	return u.renderTeam(c, fiber.StatusOK, msg, "", secret)
}

// SetWho sets how a request's audit actor is found (the server's).
func (u *UI) SetWho(who func(c *fiber.Ctx) app.Who) { u.d.Who = who }

func (u *UI) who(c *fiber.Ctx) app.Who {
	if u.d.Who != nil {
		return u.d.Who(c)
	}
	return app.Who{}
}

func (u *UI) teamAddUser(c *fiber.Ctx) error {
	if u.d.Access == nil {
		return fiber.ErrNotFound
	}
	name, pw := strings.TrimSpace(request.PostValue(c, "name")), request.PostValue(c, "password")
	role, err := app.ParseRole(request.PostValue(c, "role"))
	if err != nil {
		return u.teamDone(c, err, "", "")
	}
	generated := pw == ""
	if generated {
		pw = access.GeneratePassword()
	}
	hash, err := access.HashPassword(pw)
	if err != nil {
		return u.teamDone(c, app.Errorf(app.EINVALID, "%v", err), "", "")
	}
	if err := u.d.Access.AddUser(c.UserContext(), u.who(c), name, role, hash); err != nil {
		return u.teamDone(c, err, "", "")
	}
	if generated {
		return u.teamDone(c, nil, "Added "+name+" ("+role.String()+"). Their password, shown only this once:", pw)
	}
	return u.teamDone(c, nil, "Added "+name+" ("+role.String()+").", "")
}

func (u *UI) teamSetRole(c *fiber.Ctx) error {
	if u.d.Access == nil {
		return fiber.ErrNotFound
	}
	name := c.Params("name")
	role, err := app.ParseRole(request.PostValue(c, "role"))
	if err == nil {
		err = u.d.Access.SetRole(c.UserContext(), u.who(c), name, role)
	}
	return u.teamDone(c, err, name+" is now "+role.String()+"; their sessions have ended.", "")
}

func (u *UI) teamRemoveUser(c *fiber.Ctx) error {
	if u.d.Access == nil {
		return fiber.ErrNotFound
	}
	name := c.Params("name")
	err := u.d.Access.RemoveUser(c.UserContext(), u.who(c), name)
	return u.teamDone(c, err, "Removed "+name+"; their sessions have ended.", "")
}

func (u *UI) teamCreateToken(c *fiber.Ctx) error {
	if u.d.Access == nil {
		return fiber.ErrNotFound
	}
	name := strings.TrimSpace(request.PostValue(c, "name"))
	role, err := app.ParseRole(request.PostValue(c, "role"))
	if err != nil {
		return u.teamDone(c, err, "", "")
	}
	ttl, err := app.ParseExpiry(strings.TrimSpace(request.PostValue(c, "expires")))
	if err != nil {
		return u.teamDone(c, err, "", "")
	}
	secret, err := u.d.Access.CreateToken(c.UserContext(), u.who(c), name, role, ttl)
	if err != nil {
		return u.teamDone(c, err, "", "")
	}
	return u.teamDone(c, nil, "Created the token "+name+" ("+role.String()+"). Its secret, shown only this once (send it as Authorization: Bearer …):", secret)
}

func (u *UI) teamRevokeToken(c *fiber.Ctx) error {
	if u.d.Access == nil {
		return fiber.ErrNotFound
	}
	name := c.Params("name")
	err := u.d.Access.RevokeToken(c.UserContext(), u.who(c), name)
	return u.teamDone(c, err, "Revoked the token "+name+": it no longer works.", "")
}
