package provider

// Stripe signs t + "." + body with the endpoint secret's string bytes as-is
// ("whsec_…" is not decoded): lowercase hex HMAC-SHA256 in "v1" entries of
// "Stripe-Signature: t=…,v1=…". Several v1 entries appear while a secret
// rolls; v0 and unknown schemes are ignored. The event id and type are the
// body's "id" and "type".
var stripe = &timestamped{
	header:   "Stripe-Signature",
	list:     tsList{sep: ',', tsKey: "t", sigKey: "v1"},
	join:     ".",
	identify: stripeIdentify,
}

func init() {
	register("stripe", stripe.verifier)
	registerSigner("stripe", stripe.sign)
}

// stripeIdentify reads a Stripe event's id and type.
func stripeIdentify(body []byte) Verdict {
	var b struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	decodeBody(body, &b)
	return Verdict{ID: b.ID, Topic: b.Type}
}
