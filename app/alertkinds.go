// What an alert is, as every channel sends it; the alerter itself is
// app/alert, and what it reads of a store is app.AlertStore.

package app

// Alert kinds: what an alert is about, in its JSON, so that a script or
// an incident tool can route it.
const (
	AlertDestinationFailing   = "destination_failing"
	AlertDestinationRecovered = "destination_recovered"
	AlertDeadLetters          = "dead_letters"
	AlertStorageFailing       = "storage_failing"
	AlertStorageRecovered     = "storage_recovered"
	AlertPoison               = "poison"
	AlertBackupFailed         = "backup_failed"
	AlertBackupRecovered      = "backup_recovered"
	AlertCertificate          = "certificate"
	// AlertSubscriptionDisabled: a provider sends a source nothing (a
	// Stripe endpoint or GitHub hook turned off), as an upstream check saw.
	AlertSubscriptionDisabled = "subscription_disabled"
	// AlertSourceQuiet: a source with quiet_after accepted nothing for
	// that long; AlertSourceActive: it accepts events again.
	AlertSourceQuiet  = "source_quiet"
	AlertSourceActive = "source_active"
)

// AlertMessage is one alert as every channel sends it: the alert URL gets
// its JSON (Slack's text, plus kind, and destination or source), email its Subject
// as the subject and Text as the body.
type AlertMessage struct {
	Kind        string `json:"kind"`
	Destination string `json:"destination,omitempty"`
	// Source names the source an upstream or quiet alert is about.
	Source string `json:"source,omitempty"`
	// Subject is one line that says what happened, for an email's subject.
	Subject string `json:"-"`
	Text    string `json:"text"`
}
