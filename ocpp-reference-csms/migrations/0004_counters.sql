-- Counters shared by every node on this database. `transaction_id`: the last OCPP 1.6
-- transaction id reserved; a node reserves ids in blocks (`UPDATE ... RETURNING`), so that
-- two nodes never give out the same id, whichever charge point asks (store.rs).
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

-- The type of the token that started a transaction (`ISO14443`, `eMAID`...), as the
-- transaction ledger of ocpp-model keeps it (csms/sql_ledger.rs); NULL: not said.
ALTER TABLE transactions ADD COLUMN id_token_type TEXT;
-- Whether the id is a 2.x text id (1) or a 1.6 number (0), as the ledger wrote it; NULL: a
-- row the CSMS's own path wrote (a 1.6 row has a start key).
ALTER TABLE transactions ADD COLUMN id_is_text BIGINT;
