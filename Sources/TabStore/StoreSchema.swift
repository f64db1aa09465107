/// The stores' schema: one list of migrations, written once, rendered for each SQL dialect. A migration is
/// applied once, in order, and recorded in `schema_migrations` (its 1-based index); a store whose newest
/// migration is beyond this list was written by a newer tabserver and is refused at open.
public enum StoreSchema {
    /// Where SQLite and PostgreSQL differ, and nothing else.
    public enum Dialect: Sendable {
        case sqlite, postgres

        /// The spelling of each placeholder a migration may use.
        var types: [(placeholder: String, sql: String)] {
            switch self {
            case .sqlite:
                [
                    ("{bytes}", "BLOB"), ("{int64}", "INTEGER"), ("{bool}", "INTEGER"), ("{false}", "0"),
                    ("{table-options}", " WITHOUT ROWID"), ("{record-apply-at-function}", ""),
                    ("{record-apply-at}", Self.sqliteRecordApplyAt), ("{generated}", "VIRTUAL"),
                ]
            case .postgres:
                [
                    ("{bytes}", "BYTEA"), ("{int64}", "BIGINT"), ("{bool}", "BOOLEAN"), ("{false}", "FALSE"), ("{table-options}", ""),
                    ("{record-apply-at-function}", Self.postgresRecordApplyAtFunction),
                    ("{record-apply-at}", "tabserver_apply_at_ms(record)"), ("{generated}", "STORED"),
                ]
            }
        }

        /// A change request record's integer member `applyAtMillis`, NULL when it has none, it is not an integer or
        /// the record is not JSON (so a record never fails a write or a migration). SQLite's CASE evaluates its
        /// branches in order: `json_type` only sees valid JSON.
        static let sqliteRecordApplyAt = """
            CASE WHEN NOT json_valid(record) THEN NULL
                WHEN json_type(record, '$.applyAtMillis') = 'integer' THEN json_extract(record, '$.applyAtMillis') END
            """

        /// The same on PostgreSQL, as a function (a generated column may call only immutable ones): a record that is
        /// not JSON, or a member that is not an integer, is NULL rather than an error.
        static let postgresRecordApplyAtFunction = """
            CREATE FUNCTION tabserver_apply_at_ms(record TEXT) RETURNS BIGINT LANGUAGE plpgsql IMMUTABLE STRICT AS $$
            DECLARE
                member JSONB;
            BEGIN
                member := record::JSONB -> 'applyAtMillis';
                IF jsonb_typeof(member) = 'number' THEN
                    RETURN member::TEXT::BIGINT;
                END IF;
                RETURN NULL;
            EXCEPTION WHEN OTHERS THEN
                RETURN NULL;
            END
            $$;
            """
    }

    /// Every migration, oldest first, with dialect placeholders (`{bytes}`, `{int64}`, `{bool}`, `{false}`,
    /// `{table-options}`, and the change requests' due time: `{record-apply-at-function}`, `{record-apply-at}`,
    /// `{generated}`).
    static let migrations: [String] = [
        sourceVersions(
            "layout_versions", key: "account", more: ["message TEXT", "restored_from INTEGER", "deleted {bool} NOT NULL DEFAULT {false}"])
            + "\n" + sourceVersions("strings_versions", key: "locale"),
        // What each version extends, so that a deletion can be refused inside its transaction.
        """
        ALTER TABLE layout_versions ADD COLUMN extends TEXT;
        CREATE INDEX layout_versions_extends ON layout_versions (extends) WHERE extends IS NOT NULL;
        """,
        // API tokens (docs/access-and-webhooks.md): lists are space-joined text, times milliseconds; a token's secrets are rows
        // (the current one, and old ones until their rotation overlap ends), only their SHA-256 is kept. No foreign
        // key: a token and its secrets are always written in one transaction, and `migrate` copies tables in name
        // order (token_secrets before tokens).
        """
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            scopes TEXT NOT NULL,
            accounts TEXT NOT NULL,
            environments TEXT,
            created_at_ms {int64} NOT NULL,
            created_by TEXT NOT NULL,
            expires_at_ms {int64},
            revoked_at_ms {int64},
            last_used_at_ms {int64}
        ){table-options};
        CREATE TABLE token_secrets (
            token_id TEXT NOT NULL,
            hash TEXT NOT NULL,
            created_at_ms {int64} NOT NULL,
            retires_at_ms {int64},
            PRIMARY KEY (token_id, hash)
        ){table-options};
        """,
        // The audit log (docs/access-and-webhooks.md): an entry per change, written in its transaction, and per refused request,
        // coalesced per address, status and minute (the unique key; changes have none). Ids are MAX(id) + 1 under
        // the writers' lock (no sequence for `migrate` to carry over), and pruning keeps the newest entry, so they
        // only grow.
        """
        CREATE TABLE audit_log (
            id {int64} PRIMARY KEY,
            at_ms {int64} NOT NULL,
            actor TEXT NOT NULL,
            token_id TEXT,
            address TEXT NOT NULL,
            method TEXT NOT NULL,
            path TEXT NOT NULL,
            action TEXT NOT NULL,
            account TEXT,
            environment TEXT,
            version INTEGER,
            status INTEGER NOT NULL,
            request_id TEXT,
            count INTEGER NOT NULL,
            coalescing_key TEXT UNIQUE
        );
        CREATE INDEX audit_log_at ON audit_log (at_ms);
        """,
        // Webhooks (docs/webhooks.md) and their outbox: a change's deliveries are written in the change's transaction; lists
        // are space-joined text, times milliseconds, `active` 0 or 1. Secrets are kept as text: deliveries are signed with them.
        """
        CREATE TABLE webhooks (
            id TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            events TEXT NOT NULL,
            accounts TEXT NOT NULL,
            secret TEXT NOT NULL,
            previous_secret TEXT,
            previous_until_ms {int64},
            active {int64} NOT NULL,
            disabled_reason TEXT,
            created_at_ms {int64} NOT NULL,
            created_by TEXT
        ){table-options};
        CREATE TABLE webhook_deliveries (
            id TEXT PRIMARY KEY,
            webhook_id TEXT NOT NULL,
            event_id {int64} NOT NULL,
            type TEXT NOT NULL,
            attempts {int64} NOT NULL,
            state TEXT NOT NULL,
            last_status {int64},
            last_error TEXT,
            next_attempt_ms {int64},
            at_ms {int64} NOT NULL,
            payload {bytes} NOT NULL,
            updated_at_ms {int64} NOT NULL
        ){table-options};
        CREATE UNIQUE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, event_id);
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE state = 'pending';
        """,
        // Environments and rollouts (docs/rollouts.md): an environment points at one version of each account's layout (a
        // draft is a version no environment points at); a store written before environments had one, `production`,
        // pointing at each account's latest record. A rollout is one JSON record (TabDelivery's `Rollout.record`) beside
        // the columns it is looked up and updated by; `revision` makes each recorded change conditional. `rollout_served`
        // holds each replica's answers per arm, summed when read.
        environmentPointers("layout_pointers", key: "account", versions: "layout_versions") + """

            CREATE TABLE rollouts (
                account TEXT NOT NULL,
                environment TEXT NOT NULL,
                id {int64} NOT NULL,
                revision {int64} NOT NULL,
                ended {int64} NOT NULL,
                record {bytes} NOT NULL,
                updated_at_ms {int64} NOT NULL,
                PRIMARY KEY (account, environment, id)
            ){table-options};
            CREATE INDEX rollouts_under_way ON rollouts (ended) WHERE ended = 0;
            CREATE TABLE rollout_served (
                account TEXT NOT NULL,
                environment TEXT NOT NULL,
                id {int64} NOT NULL,
                replica TEXT NOT NULL,
                candidate {int64} NOT NULL,
                stable {int64} NOT NULL,
                updated_at_ms {int64} NOT NULL,
                PRIMARY KEY (account, environment, id, replica)
            ){table-options};
            """,
        // Strings tables per environment, like layouts: each environment points at one version of each table; a store
        // written before had `production` pointing at each table's latest version.
        environmentPointers("strings_pointers", key: "locale", versions: "strings_versions"),
        // App builds and the screens they declare (docs/builds.md): the gate checks every live one before a change
        // moves what apps get.
        """
        CREATE TABLE builds (
            platform TEXT NOT NULL,
            app_version TEXT NOT NULL,
            spec TEXT NOT NULL,
            declared_at_ms {int64} NOT NULL,
            declared_by TEXT NOT NULL,
            last_seen_ms {int64},
            PRIMARY KEY (platform, app_version)
        ){table-options};
        """,
        // Change requests held for review in protected environments (docs/change-requests.md).
        """
        CREATE TABLE change_requests (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            record TEXT NOT NULL,
            created_at_ms {int64} NOT NULL,
            claimed_by TEXT
        ){table-options};
        """,
        // Every version an environment served (pointed at, or a rollout's candidate), kept when the pointer moves on:
        // `…/tabs?version=N` serves those and no draft, and a build that can open none of the current tabs falls back
        // to the newest earlier one it can open. A store written before knows only its current pointers.
        """
        CREATE TABLE layout_served_versions (
            account TEXT NOT NULL,
            environment TEXT NOT NULL,
            version INTEGER NOT NULL,
            PRIMARY KEY (account, environment, version)
        ){table-options};
        INSERT INTO layout_served_versions (account, environment, version)
            SELECT account, environment, version FROM layout_pointers;
        """,
        // When a change request ended (applied, rejected, cancelled, failed), for its pruning after
        // `--change-request-retention` days, and the index the schedule's clock reads the approved ones and the counts
        // by. A store written before dates the requests that ended by their creation.
        """
        ALTER TABLE change_requests ADD COLUMN finished_at_ms {int64};
        UPDATE change_requests SET finished_at_ms = created_at_ms WHERE state IN ('applied', 'rejected', 'cancelled', 'failed');
        CREATE INDEX change_requests_state ON change_requests (state, finished_at_ms);
        """,
        // Versions revoked in every environment (`POST …/layout/versions/{n}/revoke`): never served by number again and
        // listed in manifests. An un-revoke keeps the row with its time, so a manifest's revision never goes back.
        """
        CREATE TABLE layout_revocations (
            account TEXT NOT NULL,
            version INTEGER NOT NULL,
            reason TEXT NOT NULL,
            revoked_at_ms {int64} NOT NULL,
            revoked_by TEXT NOT NULL,
            unrevoked_at_ms {int64},
            unrevoked_by TEXT,
            PRIMARY KEY (account, version)
        ){table-options};
        """,
        // The apps' reports (docs/rollouts.md, "Guarded rollouts"): one row per install, kind and tab of a rollout's arm
        // (`subject` `rollout:ID`) or of a version outside rollouts (`version:N`), so that an install counts once.
        """
        CREATE TABLE client_reports (
            account TEXT NOT NULL,
            environment TEXT NOT NULL,
            subject TEXT NOT NULL,
            arm TEXT NOT NULL,
            kind TEXT NOT NULL,
            tab TEXT NOT NULL,
            install TEXT NOT NULL,
            at_ms {int64} NOT NULL,
            PRIMARY KEY (account, environment, subject, arm, kind, tab, install)
        ){table-options};
        """,
        // When an approved change request is due (docs/change-requests.md), for the schedule's clock to read only the
        // due ones by an index. The database computes it from the record (its `applyAtMillis`), on every insert and
        // update, whoever writes: existing rows get it as the column is added, and during a rolling upgrade on
        // PostgreSQL the rows an older replica inserts or approves (it names only the columns it knows) are dated as
        // well, so none is missed and none is applied at a stale time (docs/operations.md, "Upgrading"). A column the
        // server wrote would not be: an older replica's approval replaces the record (and its `applyAt`) and leaves
        // such a column as it was. Frozen once released, like every migration: its expressions above too.
        """
        {record-apply-at-function}
        ALTER TABLE change_requests ADD COLUMN apply_at_ms {int64} GENERATED ALWAYS AS ({record-apply-at}) {generated};
        CREATE INDEX change_requests_due ON change_requests (state, apply_at_ms);
        """,
    ]

    /// A table of the versions of each `key`'s source (an account's layout, a locale's strings table) as uploaded, with
    /// `more` columns.
    private static func sourceVersions(_ table: String, key: String, more: [String] = []) -> String {
        let columns =
            [
                "\(key) TEXT NOT NULL", "version INTEGER NOT NULL", "source {bytes} NOT NULL", "content_type TEXT NOT NULL",
                "etag TEXT NOT NULL", "created_at_ms {int64} NOT NULL", "author TEXT",
            ] + more + ["PRIMARY KEY (\(key), version)"]
        return "CREATE TABLE \(table) (\n" + columns.map { "    " + $0 }.joined(separator: ",\n") + "\n){table-options};"
    }

    /// A table pointing each environment at one version of each `key` (an account's layout, a locale's strings table)
    /// of `versions`, created with `production` pointing at each one's latest version.
    private static func environmentPointers(_ table: String, key: String, versions: String) -> String {
        """
        CREATE TABLE \(table) (
            \(key) TEXT NOT NULL,
            environment TEXT NOT NULL,
            version INTEGER NOT NULL,
            PRIMARY KEY (\(key), environment)
        ){table-options};
        INSERT INTO \(table) (\(key), environment, version)
            SELECT \(key), 'production', MAX(version) FROM \(versions) GROUP BY \(key);
        """
    }

    /// The schema version this build writes: the number of migrations.
    public static var currentVersion: Int { migrations.count }

    /// The table that records applied migrations.
    public static func migrationsTable(_ dialect: Dialect) -> String {
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms \(render("{int64}", dialect)) NOT NULL)"
    }

    /// The migrations after `applied`, as (version, SQL in `dialect`).
    /// - Throws: ``StoreError/schemaTooNew(store:binary:)`` when `applied` is beyond what this build knows.
    public static func pending(after applied: Int, _ dialect: Dialect) throws(StoreError) -> [(version: Int, sql: String)] {
        guard applied <= currentVersion else { throw .schemaTooNew(store: applied, binary: currentVersion) }
        return migrations.enumerated().filter { $0.offset + 1 > applied }.map { ($0.offset + 1, render($0.element, dialect)) }
    }

    static func render(_ sql: String, _ dialect: Dialect) -> String {
        dialect.types.reduce(sql) { $0.replacing($1.placeholder, with: $1.sql) }
    }
}
