package app

import "net"

// PasteURL returns the URL to paste into src's platform: from public_url
// when it is set (public true), else from the listen address, which only
// a sender on this machine or network reaches.
func (c *Config) PasteURL(src *Source) (url string, public bool) {
	if c.Server.PublicURL != "" {
		return c.Server.PublicURL + "/in/" + src.Name, true
	}
	scheme := "http"
	if c.Server.TLS != TLSNone {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(c.Server.Listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1" // every address of this machine; this one reaches it from here
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/in/" + src.Name, false
}
