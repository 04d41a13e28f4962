//! Which ids the Agent Server can know. Thread and run ids there are UUIDs; anything else
//! cannot name one of its threads or runs, and is never put into a URL.

/// Whether `s` is a UUID in its canonical text form, `8-4-4-4-12` hex digits (either case) —
/// the form the server hands out. Only such ids are placed in request paths, so no id can
/// change the path or the query of a request.
pub fn is_uuid(s: &str) -> bool {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut parts = s.split('-');
    let shaped = GROUPS.iter().all(|&len| {
        parts
            .next()
            .is_some_and(|p| p.len() == len && p.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    shaped && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::is_uuid;

    #[test]
    fn only_canonical_uuids_pass() {
        assert!(is_uuid("01a23af8-b726-7721-a5ff-495fd5f57d85"));
        assert!(is_uuid("01A23AF8-B726-7721-A5FF-495FD5F57D85"));
        for bad in [
            "",
            "thread-1",
            "01a23af8b7267721a5ff495fd5f57d85",
            "01a23af8-b726-7721-a5ff-495fd5f57d8",
            "01a23af8-b726-7721-a5ff-495fd5f57d85-00",
            "01a23af8-b726-7721-a5ff-495fd5f57d8/",
            "../../assistants/x-b726-7721-a5ff-495fd5f57d85",
            "01a23af8-b726-7721-a5ff-495fd5f57d8g",
        ] {
            assert!(!is_uuid(bad), "{bad:?}");
        }
    }
}
