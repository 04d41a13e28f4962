-- The database's clock, read now (not the transaction's start): whole microseconds since the
-- Unix epoch, the unit every timestamp of the store is kept in. Workers compare it with their
-- own clock before they claim (the skew guard).
SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS now_us
