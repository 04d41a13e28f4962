-- Marks a thread deleted (the first deletion time is kept); later launches on it answer 404.
-- $1 thread, $2 now.
UPDATE threads SET deleted = true, deleted_at = COALESCE(deleted_at, $2)
WHERE thread = $1
