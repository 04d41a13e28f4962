-- Which server backend answers this client connection (the pooling probe, `pooling.rs`): behind
-- a session pooler, or with no pooler, one client connection keeps one backend and no other
-- client shares it; behind a transaction pooler the backend changes between transactions and is
-- shared. Read over the simple query protocol (no prepared statement). No parameters.
SELECT pg_backend_pid() AS pid
