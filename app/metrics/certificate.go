package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// certExpiryDesc describes hookbox_certificate_expiry_seconds.
var certExpiryDesc = prometheus.NewDesc("hookbox_certificate_expiry_seconds",
	"Seconds until the served TLS certificate expires (negative once expired); absent while there is none.", nil, nil)

// certificate is the collector of the served certificate's expiry.
type certificate struct{ notAfter func() time.Time }

// CertificateExpiry is the metric of the served certificate's remaining
// validity; notAfter is its expiry, zero while none is served
// (web.TLS.NotAfter).
func CertificateExpiry(notAfter func() time.Time) prometheus.Collector {
	return certificate{notAfter}
}

// Describe sends the metric's one description.
func (c certificate) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

// Collect sends the certificate's remaining validity, when there is one.
func (c certificate) Collect(ch chan<- prometheus.Metric) {
	if na := c.notAfter(); !na.IsZero() {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, time.Until(na).Seconds())
	}
}
