package app

import "net/url"

// ShownURL is a destination's URL as the page and `hookbox check` show
// it: its query, where a token often rides (?token=…), replaced by "…".
// (A URL with user:password is refused at load.)
func ShownURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(not a URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment = ""
	return u.String()
}
