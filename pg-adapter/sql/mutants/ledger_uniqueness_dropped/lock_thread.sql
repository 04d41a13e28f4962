-- PLANTED BUG LedgerUniquenessDropped: the thread, locked as the real start does.
-- $1 thread.
SELECT owner, deleted FROM threads WHERE thread = $1 FOR UPDATE
