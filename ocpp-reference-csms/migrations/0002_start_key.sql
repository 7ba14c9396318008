-- A 1.6 StartTransaction's own words (connector, idTag, timestamp, meterStart): the same
-- StartTransaction sent again after its answer was lost gets the id it was given, across a
-- restart too (examples/src/csms/ledger.rs).
ALTER TABLE transactions ADD COLUMN start_key TEXT;
