-- Creates many threads in one statement; existing ones are left alone, as create_thread.sql.
-- $1 threads, $2 their owners, $3 now.
INSERT INTO threads (thread, owner, created_at)
SELECT new_thread.thread, new_thread.owner, $3
FROM unnest($1::text[], $2::text[]) AS new_thread(thread, owner)
ON CONFLICT (thread) DO NOTHING
