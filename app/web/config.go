package web

import (
	"time"

	"github.com/gofiber/fiber/v2"
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
