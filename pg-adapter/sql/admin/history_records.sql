-- Whether one migration history records a migration (same version, same checksum).
-- HISTORY is replaced by the history table's quoted, schema-qualified name (a catalog name,
-- quoted by the caller); $1 the version, $2 the checksum.
SELECT EXISTS (SELECT 1 FROM HISTORY WHERE version = $1 AND checksum = $2)
