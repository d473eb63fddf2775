package app

// GlobSteps is Glob with the number of steps it took.
var GlobSteps = glob

// SearchSteps is the work Search.In does on body (bytes skipped, compared
// and fallbacks), for the test of its worst case.
func SearchSteps(s Search, body []byte) int {
	_, steps := s.index(body)
	return steps
}
