-- Creates a thread unless it exists (deleted or not: deletion is final).
-- $1 thread, $2 owner, $3 now.
INSERT INTO threads (thread, owner, created_at) VALUES ($1, $2, $3)
ON CONFLICT (thread) DO NOTHING
