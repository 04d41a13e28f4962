-- A poll whose answer could not be decoded (a proxy's error page, a cut stream) is a failure of
-- its own class, 'malformed' (core remote::ErrorClass::Malformed): backed off and counted
-- until it repeats (policy MALFORMED_STRIKES), then the task ends failed (DOMAIN §3). The
-- CHECK on poll_error_class takes the new value; every stored value still passes.
ALTER TABLE tasks DROP CONSTRAINT tasks_poll_error_class;
ALTER TABLE tasks ADD CONSTRAINT tasks_poll_error_class CHECK (poll_error_class IN
    ('timeout', 'connection', 'server', 'rate_limited', 'malformed'));
