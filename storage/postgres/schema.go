package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Advisory lock classes: the first key of pg_advisory_lock(int, int); the
// second is hashtext(current_schema()), so that two hookbox clusters in
// two schemas of one database never share a lock.
const (
	lockSchema     = 0x686b_0001 // held while the schema is created or migrated
	lockLeader     = 0x686b_0002 // held by the node that runs the once-per-cluster jobs
	lockSearch     = 0x686b_0003 // held while the body search index is built (search.go)
	lockAccess     = 0x686b_0004 // held while the first user is made (access.go)
	lockJob        = 0x686b_0005 // a job's lock by name, with the schema in the second key (joblock.go)
	lockQuarantine = 0x686b_0006 // held while a source's quarantine takes a request (quarantine.go)
)

// migrations are the schema's versions, in order: migrations[i] brings a
// database from version i to i+1. A released migration is never edited;
// a change is a new one. Every table is named hookbox_* so that hookbox can
// share a database with other tables (a schema of its own, chosen with
// search_path in the URL, is tidier still).
//
// Tables and the lists that read them (every list the status page shows is
// an index scan; TestSchema_IndexScans shows the plans):
//
//	hookbox_event_ids   (source, id) → expiry and seq: dedup by the primary key, ON CONFLICT
//	                    in the accepting statement; the sweep reads hookbox_event_ids_expires.
//	hookbox_events      seq → the event, byte-exact (and why no route took it, unrouted). Pages read the primary key backwards
//	                    (newest first), hookbox_events_source_seq for one source, and
//	                    hookbox_events_received_at for time filters and the sweep.
//	hookbox_deliveries  id → one event on its way to one destination. The outbox is
//	                    hookbox_deliveries_outbox (pending only, by destination and run_at:
//	                    the due time, or the end of a node's lease); dead letters are
//	                    hookbox_deliveries_dead; an event's deliveries hookbox_deliveries_event;
//	                    the head of an order group hookbox_deliveries_order, the delivery
//	                    before one in its group hookbox_deliveries_group.
//	hookbox_attempts    (delivery id, n) → one attempt.
//	hookbox_debounce    (route, key) → an entity's pending delivery and rate-limit window; the
//	                    row is locked (FOR UPDATE) by the accept that changes it.
//	                    hookbox_debounce_due finds what to fire, hookbox_debounce_free the
//	                    windows the sweep forgets.
//	                    hookbox_debounce_event finds the events pending deliveries wait to
//	                    send, which the sweep keeps.
//	hookbox_merged      (fired seq, merged seq): which events debouncing folded into which.
//	hookbox_poison      id → a record set aside because it could not be decoded (an event's
//	                    headers), newest first by the primary key.
//	hookbox_meta        name → value: small settings (the status password's hash).
//	hookbox_counts      (unix hour, node, shard) → the status page's counts of that hour,
//	                    added to in the transactions that accept events and record
//	                    attempts (counts.go); the page sums the rows of an hour.
//	hookbox_name_counts (unix hour, kind, name, node, shard) → a count by source,
//	                    destination or route (app.NameKind), written as hookbox_counts.
//	hookbox_last        (kind, name, node, shard) → the last accepted event of a source
//	                    and the last failed attempt (with its error) of a destination;
//	                    the newest row of a (kind, name) counts.
//	hookbox_destinations name → a destination's controls: its pause, its Retry-After hold
//	                    and the next free start of its rate, read by every node (control.go);
//	                    and its health: failing since, last error, next try, last recovery,
//	                    and the episode whose failing alert went out (health.go).
//	hookbox_sessions    the SHA-256 of a status page session's token → who and until when;
//	                    hookbox_sessions_user ends a user's, hookbox_sessions_expires
//	                    is the sweep's.
//	hookbox_quarantine  id → a request a source refused for its signature, kept bounded
//	                    (quarantine.go); hookbox_quarantine_source lists a source's in
//	                    order, hookbox_quarantine_at finds the old ones for the sweep.
//	hookbox_schema_version  the versions applied.
var migrations = []string{
	// 1: the first schema.
	`
CREATE TABLE hookbox_meta (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);
CREATE SEQUENCE hookbox_event_seq;
CREATE TABLE hookbox_event_ids (
	source   text NOT NULL,
	id       bytea NOT NULL,
	received timestamptz NOT NULL,
	expires  timestamptz NOT NULL,
	seq      bigint NOT NULL,
	PRIMARY KEY (source, id)
);
CREATE INDEX hookbox_event_ids_expires ON hookbox_event_ids (expires);
CREATE TABLE hookbox_events (
	seq         bigint PRIMARY KEY,
	source      text NOT NULL,
	id          bytea NOT NULL,
	topic       bytea NOT NULL,
	received_at timestamptz NOT NULL,
	headers     bytea NOT NULL,
	body        bytea NOT NULL
);
CREATE INDEX hookbox_events_source_seq ON hookbox_events (source, seq);
CREATE INDEX hookbox_events_received_at ON hookbox_events (received_at);
CREATE TABLE hookbox_deliveries (
	id          bigserial PRIMARY KEY,
	event_seq   bigint NOT NULL,
	destination text NOT NULL,
	state       smallint NOT NULL,
	attempts    integer NOT NULL DEFAULT 0,
	tries       integer NOT NULL DEFAULT 0,
	due         timestamptz NOT NULL,
	run_at      timestamptz,
	leased_by   text,
	created     timestamptz NOT NULL,
	updated     timestamptz NOT NULL,
	last_status integer NOT NULL DEFAULT 0,
	last_error  text NOT NULL DEFAULT ''
);
CREATE INDEX hookbox_deliveries_event ON hookbox_deliveries (event_seq);
CREATE INDEX hookbox_deliveries_outbox ON hookbox_deliveries (destination, run_at, id) WHERE state = 1;
CREATE INDEX hookbox_deliveries_dead ON hookbox_deliveries (id) WHERE state = 3;
CREATE TABLE hookbox_attempts (
	delivery_id bigint NOT NULL,
	n           integer NOT NULL,
	started     timestamptz NOT NULL,
	duration_ns bigint NOT NULL,
	status      integer NOT NULL,
	error       text NOT NULL,
	response    bytea NOT NULL,
	PRIMARY KEY (delivery_id, n)
);
CREATE TABLE hookbox_debounce (
	route         text NOT NULL,
	key           bytea NOT NULL,
	due           timestamptz,
	event_seq     bigint,
	deferred      boolean NOT NULL DEFAULT false,
	merged        bigint[] NOT NULL DEFAULT '{}',
	dests         text[] NOT NULL DEFAULT '{}',
	window_ns     bigint NOT NULL DEFAULT 0,
	window_times  timestamptz[] NOT NULL DEFAULT '{}',
	free_at       timestamptz,
	PRIMARY KEY (route, key)
);
CREATE INDEX hookbox_debounce_due ON hookbox_debounce (due) WHERE due IS NOT NULL;
CREATE INDEX hookbox_debounce_free ON hookbox_debounce (free_at) WHERE due IS NULL;
CREATE INDEX hookbox_debounce_event ON hookbox_debounce (event_seq) WHERE event_seq IS NOT NULL;
CREATE TABLE hookbox_merged (
	fired_seq  bigint NOT NULL,
	merged_seq bigint NOT NULL,
	PRIMARY KEY (fired_seq, merged_seq)
);
CREATE INDEX hookbox_merged_merged ON hookbox_merged (merged_seq);
CREATE TABLE hookbox_poison (
	id          bigserial PRIMARY KEY,
	at          timestamptz NOT NULL,
	kind        text NOT NULL,
	key         text NOT NULL,
	reason      text NOT NULL,
	delivery    bigint NOT NULL DEFAULT 0,
	destination text NOT NULL DEFAULT ''
);
`,
	// 2: the hourly counts of the status page.
	`
CREATE TABLE hookbox_counts (
	hour      bigint NOT NULL,
	node      text NOT NULL,
	shard     integer NOT NULL,
	received  bigint NOT NULL DEFAULT 0,
	accepted  bigint NOT NULL DEFAULT 0,
	duplicate bigint NOT NULL DEFAULT 0,
	rejected  bigint NOT NULL DEFAULT 0,
	debounced bigint NOT NULL DEFAULT 0,
	delivered bigint NOT NULL DEFAULT 0,
	retrying  bigint NOT NULL DEFAULT 0,
	dead      bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (hour, node, shard)
);
`,
	// 3: the overview's counts by source, destination and route, and the
	// last accepted event and failed attempt.
	`
CREATE TABLE hookbox_name_counts (
	hour  bigint NOT NULL,
	kind  smallint NOT NULL,
	name  text NOT NULL,
	node  text NOT NULL,
	shard integer NOT NULL,
	n     bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (hour, kind, name, node, shard)
);
CREATE TABLE hookbox_last (
	kind  smallint NOT NULL,
	name  text NOT NULL,
	node  text NOT NULL,
	shard integer NOT NULL,
	at    timestamptz NOT NULL,
	text  text NOT NULL DEFAULT '',
	PRIMARY KEY (kind, name, node, shard)
);
`,
	// 4: an unrouted event keeps which route filters turned it away
	// (app.Event.Unrouted; '' for every other event). A column with a
	// constant default is only a catalog change: no rewrite of the table.
	`ALTER TABLE hookbox_events ADD COLUMN IF NOT EXISTS unrouted text NOT NULL DEFAULT '';`,
	// 5: the route and order key of each delivery (and of a debounced
	// pending delivery, for its fired deliveries), and the index that
	// finds the head of an order group (the lowest pending id of a
	// destination, route and order key): the claim's NOT EXISTS probes it
	// once per candidate with an order key; hookbox_deliveries_group, of
	// every state, finds the delivery before one in its group for the
	// page. Rows written before have '' for both: no order group.
	`
ALTER TABLE hookbox_deliveries ADD COLUMN IF NOT EXISTS route text NOT NULL DEFAULT '';
ALTER TABLE hookbox_deliveries ADD COLUMN IF NOT EXISTS order_key text NOT NULL DEFAULT '';
ALTER TABLE hookbox_debounce ADD COLUMN IF NOT EXISTS order_key text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS hookbox_deliveries_order ON hookbox_deliveries (destination, route, order_key, id)
	WHERE state = 1 AND order_key <> '';
CREATE INDEX IF NOT EXISTS hookbox_deliveries_group ON hookbox_deliveries (destination, route, order_key, id)
	WHERE order_key <> '';
`,
	// 6: the destinations' controls (issue 28): a pause, the hold of a
	// Retry-After, and the next free start of a destination's rate,
	// shared by every node (control.go).
	`
CREATE TABLE IF NOT EXISTS hookbox_destinations (
	name       text PRIMARY KEY,
	paused     boolean NOT NULL DEFAULT false,
	paused_at  timestamptz,
	paused_by  text NOT NULL DEFAULT '',
	reason     text NOT NULL DEFAULT '',
	held_until timestamptz,
	next_start timestamptz
);
`,
	// 7: the destinations' health (issue 29): since when one fails, its
	// last error, its next try, its last recovery, and which episode's
	// failing alert went out (health.go).
	`
ALTER TABLE hookbox_destinations ADD COLUMN IF NOT EXISTS failing_since timestamptz;
ALTER TABLE hookbox_destinations ADD COLUMN IF NOT EXISTS last_error text NOT NULL DEFAULT '';
ALTER TABLE hookbox_destinations ADD COLUMN IF NOT EXISTS next_try timestamptz;
ALTER TABLE hookbox_destinations ADD COLUMN IF NOT EXISTS recovered_at timestamptz;
ALTER TABLE hookbox_destinations ADD COLUMN IF NOT EXISTS alerted timestamptz;
`,
	// 8: team access (issue 30): users, tokens (only the SHA-256 of a
	// secret), the version of both (one row, bumped in the transaction of
	// every change and used as the stamp of what it writes), and the
	// audit log (access.go, audit.go).
	`
CREATE TABLE IF NOT EXISTS hookbox_users (
	name    text PRIMARY KEY,
	role    text NOT NULL,
	hash    bytea NOT NULL,
	created timestamptz NOT NULL,
	changed timestamptz,
	stamp   bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS hookbox_tokens (
	name       text PRIMARY KEY,
	role       text NOT NULL,
	hash       bytea NOT NULL UNIQUE,
	created    timestamptz NOT NULL,
	created_by text NOT NULL DEFAULT '',
	expires    timestamptz,
	last_used  timestamptz,
	stamp      bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS hookbox_access_version (
	id      integer PRIMARY KEY CHECK (id = 1),
	version bigint NOT NULL
);
INSERT INTO hookbox_access_version (id, version) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS hookbox_audit (
	seq    bigserial PRIMARY KEY,
	at     timestamptz NOT NULL,
	actor  text NOT NULL,
	via    text NOT NULL,
	"from" text NOT NULL,
	action text NOT NULL,
	target text NOT NULL,
	detail text NOT NULL,
	result text NOT NULL
);
CREATE INDEX IF NOT EXISTS hookbox_audit_at ON hookbox_audit (at);
CREATE INDEX IF NOT EXISTS hookbox_audit_actor ON hookbox_audit (actor, seq);
`,
	// 9: an attempt marks whether it was a recovery probe (issue 43): a
	// probe uses no step of the retry schedule.
	`ALTER TABLE hookbox_attempts ADD COLUMN IF NOT EXISTS probe boolean NOT NULL DEFAULT false;`,
	// 10: the status page's sessions (issue 44), so that they survive a
	// restart and every node knows them: only the SHA-256 of a session's
	// token, who logged in (with their user's stamp then) and until when
	// (session.go). hookbox_sessions_user ends a user's sessions when
	// their role or password changes; hookbox_sessions_expires is the sweep's.
	`
CREATE TABLE IF NOT EXISTS hookbox_sessions (
	hash     bytea PRIMARY KEY,
	username text NOT NULL,
	role     text NOT NULL,
	fixed    boolean NOT NULL DEFAULT false,
	stamp    bigint NOT NULL,
	created  timestamptz NOT NULL,
	expires  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS hookbox_sessions_user ON hookbox_sessions (username);
CREATE INDEX IF NOT EXISTS hookbox_sessions_expires ON hookbox_sessions (expires);
`,
	// 11: how an event came when not as a webhook (app.Event.Origin:
	// 'fetched' by an upstream check, issue 45) and when its provider
	// says it happened (NULL: unknown). Catalog changes only.
	`
ALTER TABLE hookbox_events ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT '';
ALTER TABLE hookbox_events ADD COLUMN IF NOT EXISTS provider_at timestamptz;
`,
	// 12: the sources' quarantines (issue 45): requests refused for their
	// signature, kept bounded until a fixed secret takes them in
	// (quarantine.go). One source's rows in id order by the index.
	`
CREATE TABLE IF NOT EXISTS hookbox_quarantine (
	id      bigserial PRIMARY KEY,
	source  text NOT NULL,
	at      timestamptz NOT NULL,
	client  text NOT NULL,
	reason  text NOT NULL,
	size    bigint NOT NULL,
	headers bytea NOT NULL,
	body    bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS hookbox_quarantine_source ON hookbox_quarantine (source, id);
CREATE INDEX IF NOT EXISTS hookbox_quarantine_at ON hookbox_quarantine (at);
`,
}

// SchemaVersion is the schema version this build creates and expects.
var SchemaVersion = len(migrations)

// migrate creates or upgrades the schema in one transaction that holds an
// advisory lock (pg_advisory_xact_lock), so that nodes starting together
// take turns: the first applies what is missing, the others then find it
// done. The lock ends with the transaction, whatever becomes of it: no
// session keeps it, as one returned to the pool could. A database whose
// schema is newer than this build is refused rather than used.
func migrate(ctx context.Context, pool *pgxpool.Pool) (from, to int, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))", lockSchema); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS hookbox_schema_version (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return fmt.Errorf("create hookbox_schema_version: %w", err)
		}
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM hookbox_schema_version").Scan(&from); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		to = from
		if from > SchemaVersion {
			return fmt.Errorf("the database's schema is version %d, newer than this hookbox knows (%d): run the newer hookbox", from, SchemaVersion)
		}
		for v := from; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO hookbox_schema_version (version) VALUES ($1)", v+1); err != nil {
				return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
			}
		}
		to = SchemaVersion
		return nil
	})
	return from, to, err
}
