//! Idempotency without native support: before creating a run, look the key up among the
//! thread's runs (newest first, bounded paging), so a retried key finds the run an earlier
//! attempt created even when that attempt's answer was lost.
//!
//! The server lists a thread's runs newest first and cannot filter by metadata, so the lookup
//! reads `lookup_page_size` runs per page (asking only for `run_id`, `created_at` and
//! `metadata`) and stops after the first page holding the key (returning every run of that page
//! holding it, for [`tasklatch_core::reconcile::oldest_wins`]), at a short page (the end of the
//! list), or after `lookup_page_limit` pages.
//! A run created while the lookup pages only pushes older runs to later offsets: it can make a
//! run appear twice, never skip one.

use crate::config::ValidConfig;
use crate::http::Http;
use crate::text::failure;
use crate::wire::{find_in_page, KeyedRun};
use tasklatch_core::ids::ThreadId;

/// What the lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Runs with the key exist on the thread (creation time, id), newest first.
    Found(Vec<KeyedRun>),
    /// No run with the key among the runs read (all of them, or the newest
    /// `page_size × page_limit` if the thread has more).
    Absent {
        /// Whether the page limit stopped the lookup before the end of the list.
        window_exhausted: bool,
    },
    /// The thread does not exist (404 on its run list).
    ThreadGone,
}

/// Looks `key` up among `thread`'s runs. `thread` must be a validated UUID. `Err` is a bounded,
/// secret-free failure message.
pub async fn find_run(
    http: &Http,
    cfg: &ValidConfig,
    thread: &ThreadId,
    key: &str,
) -> Result<Lookup, String> {
    let size = cfg.lookup_page_size;
    for page in 0..cfg.lookup_page_limit {
        let path = format!(
            "/threads/{thread}/runs?limit={size}&offset={}&select=run_id&select=created_at&select=metadata",
            u64::from(page) * u64::from(size)
        );
        let answer = http
            .get(&path)
            .await
            .map_err(|e| failure(format_args!("run lookup: {e}")))?;
        match answer.status {
            200 => {}
            404 => return Ok(Lookup::ThreadGone),
            status => {
                let detail = http.redactor().body_detail(&answer.body);
                return Err(failure(format_args!("run lookup: HTTP {status}: {detail}")));
            }
        }
        let (len, found) = find_in_page(&answer.body, key)
            .map_err(|why| failure(format_args!("run lookup: {why}")))?;
        if !found.is_empty() {
            return Ok(Lookup::Found(found));
        }
        if len < size as usize {
            return Ok(Lookup::Absent {
                window_exhausted: false,
            });
        }
    }
    Ok(Lookup::Absent {
        window_exhausted: true,
    })
}
