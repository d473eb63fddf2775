package app

// The store's roles. bboltstore.DB keeps hookbox's state in one bbolt file,
// postgres.DB in PostgreSQL; both implement Store, the sum of the roles
// below, and storetest checks that they behave alike. Each part of hookbox
// takes only the role it uses, so that a reader sees from a signature what
// a service may touch, and a test's fake implements a handful of methods.
// No role passes 15 methods (TestStoreRoles). Every method that reads or
// writes takes ctx first and returns ctx's error once it is done
// (storetest's Cancelled).

import (
	"context"
	"time"
)

// Store is the sum of the roles: the whole durable state behind hookbox.
// Only the wiring (serve, the commands that open a data file) and the
// tests hold a Store; each service takes a role.
type Store interface {
	IngestStore
	Outbox
	ReadModel
	FigureStore
	GaugeStore
	ReplayStore
	ReplayQueryStore
	StatsStore
	AlertStore
	StreamHubStore
	ControlStore
	HealthStore
	AccessStore
	SessionStore
	AuditStore
	MetaStore
	SweepStore
	Lifecycle
	InspectStore
	JobLockStore
	UpstreamStore
	QuarantineStore
	QuietStore
}

// Accept: the receiver.

// IngestStore is what the receiver (app/receive) needs of the store: to remember an id
// once and store its event, in one durable transaction.
type IngestStore interface {
	// Accept records e's id for its source until idExpires, stores e and
	// carries out plan (deliveries due now, debounced pending deliveries,
	// setting each DebounceOp's Result), in one durable transaction. It
	// reports duplicate=true, storing nothing, when the id is already
	// remembered and unexpired at e.ReceivedAt. plan may be nil (unrouted).
	// A ctx done before the write is handed to the store's commit returns
	// ctx's error and stores nothing; once handed over, Accept waits for
	// the commit whatever ctx says.
	Accept(ctx context.Context, e *Event, idExpires time.Time, plan *Plan) (duplicate bool, err error)
}

// Deliveries: the dispatcher.

// Outbox is what the Dispatcher needs of the store: the deliveries due,
// the ones waiting beyond them, where to record attempts, the debounced
// deliveries to fire, and how many wait for a destination (its log line
// when the destination answers again). Every method honours ctx: a done ctx
// stops a call before it starts work and returns ctx's error.
type Outbox interface {
	// FirePending turns the pending deliveries due by now into deliveries
	// and frees their keys. It reports how many fired per route, and the due
	// time of the next pending one (zero if none).
	FirePending(ctx context.Context, now time.Time) (fired map[string]int, next time.Time, err error)
	// DueDeliveries returns up to limit deliveries to dest due by now, with
	// their events, skipping ids for which skip is true; next is the due time
	// of the first pending delivery not returned (zero if none).
	DueDeliveries(ctx context.Context, dest string, now time.Time, limit int, skip func(id uint64) bool) (work []Work, next time.Time, err error)
	// WaitingDeliveries returns up to limit pending deliveries to dest,
	// due or not, that come after the delivery (afterDue, afterID) in due
	// order (from the first when afterDue is zero), with their events,
	// skipping ids for which skip is true: the retries of a destination
	// that answers again, taken early. A delivery that cannot be sent is
	// set aside as DueDeliveries does.
	WaitingDeliveries(ctx context.Context, dest string, afterDue time.Time, afterID uint64, limit int, skip func(id uint64) bool) ([]Work, error)
	// RecordAttempts records several attempts in one write; errs[i] is
	// recs[i]'s error, nil when it is stored. A stored record's Attempt.N
	// is set. Each attempt moves its delivery to the next step of its
	// schedule (Delivery.Tries) unless it is Early.
	RecordAttempts(ctx context.Context, recs []AttemptRecord) (errs []error)
	// Backlog returns how many deliveries to dest are pending, counting at
	// most limit.
	Backlog(ctx context.Context, dest string, limit int) (int, error)
}

// Queries: the status pages (ui.Store) and the admin API (web.Store).

// ReadModel is what the status pages and the admin API read of a store's
// events and deliveries, one at a time or by page.
type ReadModel interface {
	// ListEvents returns events matching q, newest first, and the cursor
	// of the next page (0 when there is none).
	ListEvents(ctx context.Context, q EventQuery) ([]EventSummary, uint64, error)
	// SearchEvents is ListEvents for a query with a body search (q.Q, see
	// Search): a store that searches within a budget says in the answer
	// how far it looked. ListEvents given q.Q searches the same way.
	SearchEvents(ctx context.Context, q EventQuery) (EventSearch, error)
	// Event returns the event stored under seq, or nil when there is none.
	Event(ctx context.Context, seq uint64) (*Event, error)
	// EventDeliveries returns the deliveries of event seq.
	EventDeliveries(ctx context.Context, seq uint64) ([]*Delivery, error)
	// Delivery returns a delivery and its attempts.
	Delivery(ctx context.Context, id uint64) (*Delivery, []*Attempt, error)
	// DeadLetters pages through dead deliveries by id and counts them all.
	DeadLetters(ctx context.Context, after uint64, limit int) ([]*Delivery, int, error)
	// MergedInto returns the seqs of the events merged into event seq's
	// delivery by debouncing.
	MergedInto(ctx context.Context, seq uint64) ([]uint64, error)
	// CarriedBy is MergedInto the other way: the event whose delivery
	// carries merged event seq (the one that went out, or while the
	// debounce window is open, the latest event it holds), 0 for none.
	CarriedBy(ctx context.Context, seq uint64) (uint64, error)
	// PreviousInGroup returns the delivery before d in its order group
	// (same destination, route and order key: the highest lower id), nil
	// when d has no order key or is the first of its group: the page says
	// when d went out after a dead one.
	PreviousInGroup(ctx context.Context, d *Delivery) (*Delivery, error)
	// EventNames returns the source, id and topic of the events seqs name
	// (an event that is gone is absent), to name deliveries by them.
	EventNames(ctx context.Context, seqs []uint64) (map[uint64]EventName, error)
}

// GaugeStore is what /metrics' gauges and commit counters read of the
// store when scraped (metrics.New).
type GaugeStore interface {
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// CountPending returns the number of deliveries not yet done: due now or
	// later, and debounced ones waiting for their window.
	CountPending(ctx context.Context) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
	// CommitCounts reports the group commits since the store opened, the
	// writes they carried (their ratio is the group size), and the pages
	// written by write transactions (bbolt's figure; 0 on PostgreSQL).
	CommitCounts() (commits, writes, pages uint64)
}

// FigureStore is the figures the overview, /api/v1/stats and the
// destinations' rows show: dead, pending and retrying deliveries, the
// backlog of a destination, and the records set aside.
type FigureStore interface {
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// CountPending returns the number of deliveries not yet done: due now or
	// later, and debounced ones waiting for their window.
	CountPending(ctx context.Context) (int, error)
	// CountRetrying returns how many pending deliveries have had an
	// attempt (and wait for a retry), counting at most limit.
	CountRetrying(ctx context.Context, limit int) (int, error)
	// Backlog returns how many deliveries to dest are pending, counting at
	// most limit.
	Backlog(ctx context.Context, dest string, limit int) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
}

// ReplayStore is what the pages and the admin API (hookbox replay) change of
// finished and waiting deliveries: they send them again, or sooner.
type ReplayStore interface {
	// Replay makes a dead or delivered delivery pending again, due at now.
	Replay(ctx context.Context, id uint64, now time.Time) error
	// ReplayDead replays every dead delivery and reports how many.
	ReplayDead(ctx context.Context, now time.Time) (int, error)
	// RetryNow makes the waiting deliveries ids (pending, due after now)
	// due at now, keeping their attempts and tries, and reports how many
	// it moved; one due already or in flight is left as is. It changes
	// nothing when one of ids is unknown (an error wrapping ErrNotFound)
	// or is delivered or dead (an ECONFLICT error: RetryNowVerdict). On a
	// store shared by nodes it tells the others, as an accept does.
	RetryNow(ctx context.Context, ids []uint64, now time.Time) (int, error)
	// RetryDestination makes every waiting delivery to dest due at now,
	// as RetryNow does, and reports how many it moved.
	RetryDestination(ctx context.Context, dest string, now time.Time) (int, error)
}

// ReplayQueryStore is what a replay by query (app/replay) reads and writes
// of a store: the selection itself (SelectReplay) is the domain's, above
// the stores.
type ReplayQueryStore interface {
	// ReplayCandidates returns the dead or delivered deliveries q (checked
	// by ReplayQuery.Check) matches, at most q.Limit, the first in accept
	// order, named by their events, and whether more matched. A body
	// search (q.Q) reads every body the other filters leave, without
	// SearchEvents' budget (a dry run must select what its run replays),
	// until q.Limit matched or ctx is done.
	ReplayCandidates(ctx context.Context, q ReplayQuery) ([]ReplayItem, bool, error)
	// ReplayPending counts the pending deliveries a replay by q (checked)
	// leaves alone and says so (ReplayQuery.Leaves: 0 unless q's status
	// is "any"), reading as ReplayCandidates reads.
	ReplayPending(ctx context.Context, q ReplayQuery) (int, error)
	// Requeue makes each delivery of ids that is still in one of the
	// states from pending again, due at now, keeping its attempts, in one
	// write, and reports how many it changed (one gone or in another
	// state is left alone). On a store shared by nodes it tells the
	// others, as an accept does.
	Requeue(ctx context.Context, ids []uint64, from []DeliveryState, now time.Time) (int, error)
	// Delivery and EventNames are ReadModel's: the replay of one delivery
	// reads it, and names it by its event.
	Delivery(ctx context.Context, id uint64) (*Delivery, []*Attempt, error)
	EventNames(ctx context.Context, seqs []uint64) (map[uint64]EventName, error)
	// ListEvents and EventDeliveries are ReadModel's too: the replay of
	// one event finds it by its name and reads its deliveries.
	ListEvents(ctx context.Context, q EventQuery) ([]EventSummary, uint64, error)
	EventDeliveries(ctx context.Context, seq uint64) ([]*Delivery, error)
}

// StreamStore is what the stream reads of a store: the events accepted
// after a cursor. Both stores implement it; on PostgreSQL it returns what
// every node accepted.
type StreamStore interface {
	// EventsAfter returns up to limit events whose Seq is above after, in
	// ascending Seq, whole (headers and body); it stops after the event
	// whose body takes the bodies read to maxBytes or more (the bodies are
	// the sender's to size: a page always holds at least one event). An event whose commit comes
	// after a higher Seq's (PostgreSQL hands out seqs before commit) shows
	// up in a later call: the reader keeps the gaps it saw open for
	// StreamGapWait (StreamCursor).
	EventsAfter(ctx context.Context, after uint64, limit, maxBytes int) ([]*Event, error)
}

// StreamHubStore is what the hub reads of a store: the events after a
// cursor, one event by seq (a gap's re-check), and the newest event (where
// a hub starts).
type StreamHubStore interface {
	StreamStore
	Event(ctx context.Context, seq uint64) (*Event, error)
	ListEvents(ctx context.Context, q EventQuery) ([]EventSummary, uint64, error)
}

// Counts and figures: Stats, /metrics and the Alerter.

// CountStore keeps the status page's hourly counts durably, so that a
// restart changes nothing on the page. A store counts what its own writes
// do in the same transaction: an accepted event (received and accepted, in
// the hour it was received, and debounced when it merged into a pending
// delivery) and each recorded attempt (delivered, retrying or dead, in the
// hour the attempt ended). What no write carries (requests refused or
// answered as duplicates) comes through AddCounts.
type CountStore interface {
	// AddCounts adds c to the hour of at. The store keeps them in memory
	// and writes them with a later commit (and at Close): a crash may lose
	// the ones not written yet, never a count of an accepted event or of
	// an attempt.
	AddCounts(at time.Time, c Counts)
	// HourlyCounts returns the counts of the hours from the one of from to
	// the one of to, both included, oldest first; hours with nothing
	// counted may be left out. It includes what AddCounts holds.
	HourlyCounts(ctx context.Context, from, to time.Time) ([]HourCounts, error)

	// AddNamed adds n to the count of (k, name) in the hour of at, held
	// and written as AddCounts does.
	AddNamed(at time.Time, k NameKind, name string, n uint64)
	// NamedCounts sums the counts by name of the hours from the one of
	// from to the one of to, both included, with what AddNamed holds.
	NamedCounts(ctx context.Context, from, to time.Time) (map[Named]uint64, error)
	// Lasts returns the last accepted event of each source and the last
	// failed and last delivering attempt of each destination, as the
	// store's commits wrote them.
	Lasts(ctx context.Context) (map[Named]Last, error)
}

// StatsStore is what Stats (NewStats) needs of the store: the counts it keeps and
// shows, and the destinations' stored health.
type StatsStore interface {
	CountStore
	// DestinationHealths returns the stored health of every destination
	// that has any, by name (HealthStore's): the rows show it with what
	// this node's dispatcher noted and has not stored yet.
	DestinationHealths(ctx context.Context) (map[string]DestinationHealth, error)
}

// AlertStore is what the Alerter (app/alert) reads of the store: the dead deliveries
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

// QuietStore is what the alerter's watch of quiet sources (quiet_after)
// reads and keeps: when each source last accepted an event, as the
// store's commits wrote it, and the mark of the episode alerted (by name,
// SourceQuietMeta), so that a restart does not alert it again.
type QuietStore interface {
	// Lasts is CountStore's.
	Lasts(ctx context.Context) (map[Named]Last, error)
	// Meta and SetMeta are MetaStore's.
	Meta(ctx context.Context, name string) ([]byte, error)
	SetMeta(ctx context.Context, name string, value []byte) error
}

// Destinations: the Pauser, the dispatcher's lanes and the health notes.

// ControlStore keeps destinations' controls: the Pauser writes pauses,
// the dispatcher (its Controls) reads them and writes Retry-After holds.
// Every node of a cluster reads the same ones.
type ControlStore interface {
	// PauseDestination pauses dest from at, by by for reason, durably; a
	// pause of a paused destination keeps the first one's time and who.
	PauseDestination(ctx context.Context, dest string, at time.Time, by, reason string) error
	// ResumeDestination ends dest's pause, durably; resuming one not
	// paused is no error.
	ResumeDestination(ctx context.Context, dest string) error
	// HoldDestination holds dest until until (a Retry-After), unless it is
	// held until later already.
	HoldDestination(ctx context.Context, dest string, until time.Time) error
	// DestinationControls returns the controls of every destination that
	// has any, by name.
	DestinationControls(ctx context.Context) (map[string]DestinationControl, error)
}

// RateStore is a store that keeps a destination's rate for a cluster
// (PostgreSQL only): the nodes reserve their starts from one shared slot.
// serve sets it as the dispatcher's Rates.
type RateStore interface {
	// ReserveStarts reserves n starts to dest spaced by spacing and
	// returns when the first may start and the store's clock now: the
	// caller waits first-now by its own clock.
	ReserveStarts(ctx context.Context, dest string, n int, spacing time.Duration) (first, now time.Time, err error)
}

// HealthStore keeps destinations' health: the dispatcher (its Health)
// reads and writes it, the Alerter (its Health) marks what it alerted on.
// Every node of a cluster reads and merges into the same records.
type HealthStore interface {
	// SaveDestinationHealth merges a node's view of dest into its stored
	// health (MergeHealth), in one write; Alerted is the store's, kept.
	SaveDestinationHealth(ctx context.Context, dest string, view DestinationHealth) error
	// DestinationHealths returns the stored health of every destination
	// that has any, by name.
	DestinationHealths(ctx context.Context) (map[string]DestinationHealth, error)
	// MarkDestinationAlerted sets dest's Alerted to to when it is from,
	// and reports whether it did: of several nodes that try the same
	// change, one wins.
	MarkDestinationAlerted(ctx context.Context, dest string, from, to time.Time) (bool, error)
}

// Access: the access service (app/access: the server's users, tokens and
// audit log), and hookbox user and token on a stopped server or PostgreSQL.

// AccessStore keeps users and tokens; on PostgreSQL every node shares
// them. Names are unique among users and among tokens.
type AccessStore interface {
	// AccessVersion returns the version of the users and tokens: it
	// changes with every change of them, and only then.
	AccessVersion(ctx context.Context) (uint64, error)
	// LoadAccess returns every user and token with the version read.
	LoadAccess(ctx context.Context) (AccessData, error)
	// CreateUser adds u, giving it a new Stamp; an Error ECONFLICT when
	// the name is taken.
	CreateUser(ctx context.Context, u User) error
	// SetUserRole changes name's role at at, ending their sessions
	// (SessionStore); ENOTFOUND when there is no such user, and guard's
	// ECONFLICT when the change would leave no admin (AdminGuard.Check,
	// on the admins read in the transaction that writes the change, so
	// that concurrent changes, on any node, cannot both pass).
	SetUserRole(ctx context.Context, name string, role Role, at time.Time, guard AdminGuard) error
	// SetUserPassword changes name's password hash at at, ending their
	// sessions; ENOTFOUND when there is no such user.
	SetUserPassword(ctx context.Context, name string, hash []byte, at time.Time) error
	// RemoveUser removes name and their sessions; ENOTFOUND when there is
	// no such user, and guard's ECONFLICT when that would leave no admin
	// (as SetUserRole).
	RemoveUser(ctx context.Context, name string, guard AdminGuard) error
	// CreateToken adds t, giving it a new Stamp; ECONFLICT when the name
	// is taken.
	CreateToken(ctx context.Context, t Token) error
	// RevokeToken removes the token name; ENOTFOUND when there is none.
	RevokeToken(ctx context.Context, name string) error
	// TouchToken records that name was used at at (a later time than the
	// one kept only); it does not change the version. No such token is no
	// error.
	TouchToken(ctx context.Context, name string, at time.Time) error
	// EnsureFirstUser makes sure a user exists, once for the whole store
	// whatever the number of nodes starting (under a lock they all take).
	// When no user exists: a status password hash kept by an older hookbox
	// under PasswordHashKey becomes the admin user name's, without calling
	// first; else first is called (it makes a password, shows it, and
	// returns its hash) and the admin user name is created with that hash.
	// created says first was called and its user stored.
	EnsureFirstUser(ctx context.Context, name string, at time.Time, first func() ([]byte, error)) (created bool, err error)
}

// SessionStore keeps the status page's sessions (app/access): only the
// SHA-256 of each token, with who logged in and until when; on PostgreSQL
// every node shares them. AccessStore's SetUserRole, SetUserPassword and
// RemoveUser delete the user's sessions in the transaction of the change.
type SessionStore interface {
	// CreateSession stores s durably; ECONFLICT when its hash is taken.
	CreateSession(ctx context.Context, s Session) error
	// FindSession returns the session of hash, expired or not; ok is false
	// when there is none.
	FindSession(ctx context.Context, hash [32]byte) (s Session, ok bool, err error)
	// DeleteSession deletes the session of hash; none is no error.
	DeleteSession(ctx context.Context, hash [32]byte) error
	// DeleteExpiredSessions deletes at most limit sessions expired at or
	// before now, and reports how many it deleted.
	DeleteExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error)
}

// AuditStore keeps the audit log: the access service appends to it and
// reads it (the Audit page and API).
type AuditStore interface {
	// AppendAudit adds e durably, setting its Seq.
	AppendAudit(ctx context.Context, e AuditEntry) error
	// Audit returns the entries q selects, newest first.
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// DeleteAuditBefore deletes at most limit entries older than t and
	// reports how many it deleted.
	DeleteAuditBefore(ctx context.Context, t time.Time, limit int) (int, error)
}

// MetaStore keeps small settings by name, such as the status password's
// hash of an older hookbox (which EnsureFirstUser turns into the admin
// user); serve's storage health probe writes one.
type MetaStore interface {
	// Meta returns the value kept under name, nil when there is none.
	Meta(ctx context.Context, name string) ([]byte, error)
	// SetMeta keeps value under name, durably.
	SetMeta(ctx context.Context, name string, value []byte) error
}

// Maintenance: the Sweeper, the backups, and what serve wires.

// SweepStore is what the Sweeper (app/sweep) needs of the store: each method forgets
// or deletes what retention no longer keeps, a bounded chunk at a time.
type SweepStore interface {
	// ForgetExpiredIDs forgets at most limit ids that expired at or before
	// now, and reports how many it forgot.
	ForgetExpiredIDs(ctx context.Context, now time.Time, limit int) (int, error)
	// DeleteEventsBefore deletes at most limit events received before t,
	// and reports how many it deleted.
	DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int, error)
	// PruneWindows forgets at most limit rate-limit windows that emptied
	// by now, and reports how many.
	PruneWindows(ctx context.Context, now time.Time, limit int) (int, error)
	// DeleteAuditBefore deletes at most limit audit entries older than t,
	// and reports how many it deleted.
	DeleteAuditBefore(ctx context.Context, t time.Time, limit int) (int, error)
	// PruneCounts forgets the hours that end at or before t (their counts
	// by name too), and reports how many it forgot.
	PruneCounts(ctx context.Context, before time.Time) (int, error)
	// DeleteQuarantinedBefore deletes at most limit quarantined requests
	// that arrived before t, and reports how many (as QuarantineStore).
	DeleteQuarantinedBefore(ctx context.Context, t time.Time, limit int) (int, error)
}

// BackupStore writes consistent copies of the data file (bboltstore.DB
// only): the Backuper (app/backup) takes it.
type BackupStore interface {
	// WriteBackup writes a complete copy to path atomically and returns its size.
	WriteBackup(ctx context.Context, path string) (int64, error)
}

// Lifecycle is what serve wires to a store: the signals of its commits, its
// health for /healthz, and its end.
type Lifecycle interface {
	// OnOpened sets f to be called, once per commit, after a commit that
	// opened deliveries or debounce steps; f must not block.
	OnOpened(f func())
	// OnCommit sets f to be told the outcome of every commit of a write:
	// nil, or the error that failed it. hookbox follows its storage's
	// health with it (StorageHealth); f must not block.
	OnCommit(f func(err error))
	// Ping reports whether the store can serve; it backs /healthz.
	Ping(ctx context.Context) error
	// Close lets writes in flight finish, then refuses new ones.
	Close() error
}

// InspectStore is what the tests (storetest, the end-to-end ones) read of a
// store to check what its writes did; no service uses it.
type InspectStore interface {
	// LookupID reports whether source's id is remembered, until when, and
	// the seq of the event accepted with it.
	LookupID(ctx context.Context, source, id string) (expires time.Time, seq uint64, ok bool, err error)
	// Counts reports how many ids are remembered and how many events are stored.
	Counts(ctx context.Context) (ids, events int, err error)
	// PendingCount returns the number of debounced deliveries waiting for
	// their window.
	PendingCount(ctx context.Context) (int, error)
}
