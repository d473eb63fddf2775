package provider

// testTopics is the topic hookbox sign sends for a provider that reads the
// topic from a header when none is given: a common event of that platform,
// so that a route with a topic filter, such as the demo's, matches a test
// event as it would the platform's.
var testTopics = map[string]string{
	"shopify":     "orders/create",
	"woocommerce": "order.created",
	"github":      "push",
	"token":       "test.event",
	"hmac":        "test.event",
}

// TestTopic returns the topic of a test event for provider name, "" for a
// provider that reads the topic from the body (the body must carry it).
func TestTopic(name string) string { return testTopics[name] }
