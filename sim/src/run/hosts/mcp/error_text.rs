//! The texts a remote server (or the ingress in front of it) puts into a transient error, as
//! real ones do: a request id, a time or an attempt counter inside the message, the remote id
//! in a sentence, a JSON string value or a URL path, an ingress's HTML page. Consecutive errors
//! of one outage differ only in their text, which must never notify (the fingerprint leaves the
//! poll error's text out), and every shape echoes the remote id, which must never reach an
//! output (it is a secret).
//!
//! The shape and the varying parts are a pure function of the simulated time and the remote id:
//! no draw from the plan's streams, so the rest of a seed's world is as before.

/// How many shapes [`transient_text`] writes.
pub const SHAPES: u64 = 5;

/// The text of a transient error served at `t_ms` for a call about `remote_id`.
pub fn transient_text(t_ms: u64, remote_id: &str) -> String {
    let request = mix(t_ms, remote_id);
    match (t_ms / 10) % SHAPES {
        0 => format!("503 service unavailable while reading {remote_id}"),
        1 => format!(
            "upstream error (request id req_{request:016x}, after {} ms): task {remote_id} unavailable",
            t_ms % 10_000
        ),
        2 => format!(
            "{{\"error\":{{\"code\":-32603,\"message\":\"internal error\",\"data\":{{\"taskId\":\"{remote_id}\",\"requestId\":\"{request:x}\"}}}}}}"
        ),
        3 => format!(
            "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><p>GET /mcp/tasks/{remote_id}?t={t_ms}</p><hr>nginx</body></html>"
        ),
        _ => format!(
            "Service Unavailable. Retry attempt {} for ({remote_id}).",
            request % 7 + 1
        ),
    }
}

/// A 64-bit FNV-1a hash of the time and the id: a request id that varies from call to call.
fn mix(t_ms: u64, remote_id: &str) -> u64 {
    let bytes = t_ms.to_le_bytes().into_iter().chain(remote_id.bytes());
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_shape_echoes_the_id_and_texts_vary() {
        let texts: Vec<String> = (0..SHAPES * 10)
            .map(|i| transient_text(1_000 + i * 10, "rt-42"))
            .collect();
        assert!(texts.iter().all(|t| t.contains("rt-42")));
        assert!(
            texts.windows(2).all(|w| w[0] != w[1]),
            "consecutive errors differ"
        );
        let varying: BTreeSet<&String> = texts.iter().filter(|t| t.contains("req_")).collect();
        assert_eq!(varying.len(), 10, "a request id varies from call to call");
        let shapes: BTreeSet<char> = texts.iter().filter_map(|t| t.chars().next()).collect();
        assert_eq!(shapes.len() as u64, SHAPES);
    }
}
