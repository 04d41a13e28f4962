-- PLANTED BUG LedgerUniquenessDropped (feature `mutations` only): the run ledger forgets that a
-- key has one run. Run once, on a throwaway database.
DROP INDEX IF EXISTS runs_key_unique
