package provider

// Paddle signs ts + ":" + body with the full secret string, including its
// "pdl_ntfset_" prefix: lowercase hex HMAC-SHA256 in "h1" entries of
// "Paddle-Signature: ts=…;h1=…". Several h1 entries are tried; unknown
// schemes (h2, …) are ignored. The event id and type are the body's
// "event_id" and "event_type".
var paddle = &timestamped{
	header:   "Paddle-Signature",
	list:     tsList{sep: ';', tsKey: "ts", sigKey: "h1"},
	join:     ":",
	identify: paddleIdentify,
}

func init() {
	register("paddle", paddle.verifier)
	registerSigner("paddle", paddle.sign)
}

// paddleIdentify reads a Paddle event's id and type.
func paddleIdentify(body []byte) Verdict {
	var b struct {
		EventID   string `json:"event_id"`
		EventType string `json:"event_type"`
	}
	decodeBody(body, &b)
	return Verdict{ID: b.EventID, Topic: b.EventType}
}
