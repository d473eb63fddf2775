// What an alert is, as every channel sends it, and what the alerter reads
// of a store; the alerter itself is app/alert.

package app

import "context"

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
)

// AlertMessage is one alert as every channel sends it: the alert URL gets
// its JSON (Slack's text, plus kind and destination), email its Subject
// as the subject and Text as the body.
type AlertMessage struct {
	Kind        string `json:"kind"`
	Destination string `json:"destination,omitempty"`
	// Subject is one line that says what happened, for an email's subject.
	Subject string `json:"-"`
	Text    string `json:"text"`
}

// AlertStore is what the Alerter reads of the store: the dead deliveries
// it alerts on, the records set aside it reports, and how many deliveries
// wait for a destination.
type AlertStore interface {
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// Backlog returns how many deliveries to dest are pending, counting at
	// most limit.
	Backlog(ctx context.Context, dest string, limit int) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
}
