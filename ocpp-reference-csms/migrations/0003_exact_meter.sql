-- A transaction's energy registers exactly as the charge point wrote them (in Wh, as
-- decimal text: `2935.600` stays `2935.600`), beside the DOUBLE PRECISION columns that SQL
-- sums and averages read (and that rows written before this migration alone have).
ALTER TABLE transactions ADD COLUMN meter_start TEXT;
ALTER TABLE transactions ADD COLUMN meter_last TEXT;
