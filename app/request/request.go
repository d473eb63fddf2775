// Package request holds the helpers that the web edge and the status
// pages both use to read a request: a form field from the body only, and
// a redirect target kept on this site.
package request

import "github.com/gofiber/fiber/v2"

// maxNext bounds a redirect target kept across the login.
const maxNext = 2048

// SafeNext keeps a redirect on this site: a path that starts with one '/'
// and holds only printable ASCII, so no "//host" or "/\host" (which
// browsers take as another site), no control character (a CR or LF would
// end the Location header and start another; browsers drop TAB and turn
// "/<TAB>/host" into "//host"), no space or byte past ASCII. Anything else
// is "/".
func SafeNext(n string) string {
	if n == "" || len(n) > maxNext || n[0] != '/' || len(n) > 1 && (n[1] == '/' || n[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	return n
}

// PostValue is a field of a url-encoded form body, copied: never one
// from the query string, where a token or password would leak through
// logs and Referer, and never one from a multipart body.
func PostValue(c *fiber.Ctx, key string) string {
	return string(c.Request().PostArgs().Peek(key))
}
