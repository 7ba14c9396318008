-- Counters shared by every node on this database. `transaction_id`: the last OCPP 1.6
-- transaction id reserved; a node reserves ids in blocks (`UPDATE ... RETURNING`), so that
-- two nodes never give out the same id, whichever charge point asks (store.rs).
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
