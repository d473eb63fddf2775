package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/ui"
)

// configJSON is GET /api/v1/config: which config runs, since when, what
// of the file waits for a restart, and the last config a reload refused.
type configJSON struct {
	Path     string    `json:"path"`
	LoadedAt time.Time `json:"loaded_at"`
	// RestartToApply names the keys of the file that differ from what
	// runs and apply at the next start (absent: none).
	RestartToApply []string     `json:"restart_to_apply,omitempty"`
	Sources        int          `json:"sources"`
	Destinations   int          `json:"destinations"`
	Routes         int          `json:"routes"`
	Refused        *refusalJSON `json:"refused,omitempty"`
}

// refusalJSON is a config a reload refused: the one in force kept running.
type refusalJSON struct {
	Path string    `json:"path"`
	At   time.Time `json:"at"`
	// Errors are its mistakes, each "file: key: reason".
	Errors []string `json:"errors"`
}

func (s *Server) handleConfig(c *fiber.Ctx) error {
	l := s.running.Loaded()
	out := configJSON{Path: l.Path, LoadedAt: utc(l.At), RestartToApply: l.Restart,
		Sources: len(l.Config.Sources), Destinations: len(l.Config.Destinations), Routes: len(l.Config.Routes)}
	if f := s.running.Refused(); f != nil {
		out.Refused = &refusalJSON{Path: f.Path, At: utc(f.At), Errors: f.Reasons}
	}
	return c.JSON(out)
}

// reloadJSON is the answer of POST /api/v1/reload: the changes put in
// force ("reloaded"), or the mistakes that refused the file ("refused",
// 422), each "file:line: key: reason" as hookbox check prints it.
type reloadJSON struct {
	Status  string          `json:"status"`
	Path    string          `json:"path"`
	Changes *app.ConfigDiff `json:"changes,omitempty"`
	Error   string          `json:"error,omitempty"`
	Errors  []string        `json:"errors,omitempty"`
}

// handleReload reads the config file again and puts it in force, as
// SIGHUP does, and answers what changed or why it was refused. The audit
// entry names the caller; a refusal records its first mistake.
func (s *Server) handleReload(c *fiber.Ctx) error {
	if s.deps.Reload == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "this server does not reload its config"))
	}
	r := s.deps.Reload()
	c.Locals(ui.AuditTarget, r.Path)
	if f := r.Refused; f != nil {
		msg := fmt.Sprintf("config refused (%d mistakes): the running config stays in force", len(f.Reasons))
		if len(f.Reasons) == 1 {
			msg = "config refused: the running config stays in force"
		}
		first := ""
		if len(f.Reasons) > 0 {
			first = ": " + f.Reasons[0]
		}
		c.Locals(errorLocal, msg+first)
		return c.Status(fiber.StatusUnprocessableEntity).JSON(reloadJSON{Status: "refused", Path: r.Path, Error: msg, Errors: f.Reasons})
	}
	c.Locals(ui.AuditDetail, strings.Join(r.Diff.Lines(), "; "))
	return c.JSON(reloadJSON{Status: "reloaded", Path: r.Path, Changes: &r.Diff})
}
