package web

// BodyBudgetLeft is what is left of server.max_body_bytes_total now.
func (s *Server) BodyBudgetLeft() int64 { return s.bodies.free.Load() }
