-- The reference CSMS's state (examples/src/csms/store.rs). One schema for SQLite and
-- PostgreSQL: TEXT, BIGINT and DOUBLE PRECISION mean the same to both; times are
-- milliseconds since the Unix epoch; a password is the hex of its SHA-256 digest.

-- Transactions: open ones come back at start; any node of a cluster reads them all.
CREATE TABLE IF NOT EXISTS transactions (
    identity TEXT NOT NULL,
    id TEXT NOT NULL,
    connector TEXT NOT NULL,
    id_tag TEXT,
    started_ms BIGINT NOT NULL,
    ended_ms BIGINT,
    stop_reason TEXT,
    charging_state TEXT,
    meter_start_wh DOUBLE PRECISION,
    meter_last_wh DOUBLE PRECISION,
    samples BIGINT NOT NULL,
    last_seq_no BIGINT,
    PRIMARY KEY (identity, id)
);
CREATE INDEX IF NOT EXISTS transactions_open ON transactions (ended_ms);

-- The token store (Authorize, transactions); `settings.tokens_enabled` says it is on even
-- when empty (unknown tokens refused).
CREATE TABLE IF NOT EXISTS tokens (
    id_token TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    group_id TEXT,
    expiry TEXT
);

-- Per-station settings an operator made: boot policy, security profile, Basic password.
CREATE TABLE IF NOT EXISTS stations (
    identity TEXT PRIMARY KEY,
    boot_policy TEXT,
    security_profile BIGINT,
    password_sha256 TEXT,
    password_removed BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
