package cli

import (
	"context"
	"io"
	"log/slog"

	"hookbox/app"
)

// logComponent is the field every log line has, beside time, level and
// msg; where they apply, a line also has source, destination, event,
// delivery and client (README, "Logs").
const logComponent = "component"

// newLogger builds serve's logger: cfg's format (text or JSON) at level,
// to w. Every line carries a component: a logger that names none (the
// standard library's log, a library's) gets "hookbox".
func newLogger(w io.Writer, cfg app.LogConfig, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Format == app.LogJSON {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(componentHandler{Handler: h})
}

// componentHandler adds component=hookbox to a record whose logger, and
// the record itself, name no component.
type componentHandler struct {
	slog.Handler
	named bool // a component is among the logger's attributes
}

func (h componentHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.named {
		named := false
		r.Attrs(func(a slog.Attr) bool {
			named = a.Key == logComponent
			return !named
		})
		if !named {
			r = r.Clone()
			r.AddAttrs(slog.String(logComponent, "hookbox"))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h componentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	named := h.named
	for _, a := range attrs {
		named = named || a.Key == logComponent
	}
	return componentHandler{Handler: h.Handler.WithAttrs(attrs), named: named}
}

// WithGroup names the component first when none is named: inside the
// group it would be g.component.
func (h componentHandler) WithGroup(name string) slog.Handler {
	inner := h.Handler
	if !h.named {
		inner = inner.WithAttrs([]slog.Attr{slog.String(logComponent, "hookbox")})
	}
	return componentHandler{Handler: inner.WithGroup(name), named: true}
}
