// The routes' transforms, as the dispatcher's senders apply them: the
// body each delivery goes out with.

package dispatch

import "hookbox/app"

// sendTransforms are the routes' transforms for the dispatcher, by route
// name, and the bound of the bodies they make; built once.
type sendTransforms struct {
	byRoute map[string]app.Transform // nil when no route has one
	max     int
}

func newSendTransforms(cfg *app.Config) sendTransforms {
	s := sendTransforms{max: cfg.Server.MaxBodyBytes}
	for _, r := range cfg.Routes {
		if r.Transform != nil {
			if s.byRoute == nil {
				s.byRoute = map[string]app.Transform{}
			}
			s.byRoute[r.Name] = r.Transform
		}
	}
	return s
}

// of returns the body w goes out with: nil (the event's, with the
// sender's headers) unless its route has a transform. The event's body
// is parsed again for each delivery: the transforms of one event run in
// different senders, at different times.
func (s *sendTransforms) of(w app.Work) (*app.Transformed, error) {
	if s.byRoute == nil {
		return nil, nil
	}
	t := s.byRoute[w.Delivery.Route]
	if t == nil {
		return nil, nil
	}
	return app.ApplyTransform(t, w.Event.RuleInput(), s.max)
}
