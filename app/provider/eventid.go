package provider

// idFrom says where each provider's rule finds the event id, for the 400
// of a request without one: the sender (or the person testing by hand)
// learns which header or field was missing.
var idFrom = map[string]string{
	"shopify":     "the X-Shopify-Event-Id or X-Shopify-Webhook-Id header (or the newer shopify-event-id or shopify-webhook-id)",
	"github":      "the X-GitHub-Delivery header",
	"stripe":      `the body's "id" field`,
	"paddle":      `the body's "event_id" field`,
	"square":      `the body's "event_id" field`,
	"bigcommerce": `the body's "hash" field`,
	"standard":    "the webhook-id (or svix-id) header",
	"token":       "the Idempotency-Key header (a random id when it is absent)",
	"woocommerce": "the body's SHA-256 (every body has one)",
	"hmac":        "the source's id template (the hmac provider has no rule of its own)",
}

// IDFrom says where provider name's rule reads the event id from, e.g.
// "the X-GitHub-Delivery header"; "" for a name it does not know.
func IDFrom(name string) string { return idFrom[name] }
