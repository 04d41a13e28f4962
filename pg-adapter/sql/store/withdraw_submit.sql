-- Deletes a submit's intent nothing remote was started for (DOMAIN §7): only while it still
-- waits for its handle (transitions::submit::awaits_handle). $1 id. One row or none.
DELETE FROM tasks
WHERE id = $1 AND remote_task_id = '' AND remote_status = 'submitted'
