//! Polls brought forward after an outage or on an operator's request (`Store::poll_sooner`).

use super::support::*;
use crate::lease::{Lease, LeaseToken};
use crate::policy::MAX_BATCH;
use crate::remote::{ErrorClass, PollError};
use crate::status::CancelStatus;
use crate::store::*;
use crate::task::TaskRow;
use std::time::Duration;

/// A task of `server` whose last `errors` polls failed, next due at `next` seconds.
fn backed_off(id: &str, server: &str, errors: u32, next: i64) -> TaskRow {
    let mut row = submitted(id, t(0));
    row.identity.server = server.into();
    row.poll.consecutive_errors = errors;
    row.poll.last_error = (errors > 0).then(|| PollError {
        class: ErrorClass::Connection,
        message: "connection refused".into(),
    });
    row.poll.next_poll_at = Some(t(next));
    row
}

fn sooner(server: Option<&str>, backed_off_only: bool, from: i64, spacing_s: u64) -> PollSooner {
    PollSooner {
        server: server.map(Into::into),
        backed_off_only,
        now: t(10),
        from: t(from),
        spacing: Duration::from_secs(spacing_s),
        limit: 10,
    }
}

/// Only pollable, backed-off tasks of the server with no cancel in progress and no live poll
/// lease, due after `from`, move — earlier only, `spacing` apart in (next poll, id) order;
/// nothing else of any row changes; a limit above `MAX_BATCH` is refused.
pub async fn poll_sooner_brings_backed_off_polls_forward_spread<S: Store>(s: &S) {
    let mut leased = backed_off("h", "srv", 2, 7_000);
    leased.poll.claims = 1;
    leased.poll.lease = Some(Lease {
        owner: "w".into(),
        token: LeaseToken(1),
        expires_at: t(100),
    });
    let mut cancelling = backed_off("f", "srv", 3, 4_000);
    cancelling.cancel.requested_at = Some(t(1));
    cancelling.cancel.status = CancelStatus::Requested;
    cancelling.cancel.due_at = Some(t(9_000));
    let rows = [
        backed_off("a", "srv", 3, 3_600),
        backed_off("b", "srv", 2, 1_800),
        backed_off("c", "srv", 0, 5_000),
        backed_off("d", "srv2", 4, 3_600),
        backed_off("e", "srv", 1, 5),
        cancelling,
        leased,
    ];
    for r in rows.iter().cloned() {
        s.insert_task(r).await.unwrap();
    }
    let done = s
        .poll_sooner(sooner(Some("srv"), true, 10, 1))
        .await
        .unwrap();
    assert_eq!(
        done,
        PolledSooner {
            selected: 2,
            moved: 2
        }
    );
    assert_eq!(row(s, "b").await.poll.next_poll_at, Some(t(10)));
    assert_eq!(row(s, "a").await.poll.next_poll_at, Some(t(11)));
    for (r, id) in rows.iter().zip(["a", "b", "c", "d", "e", "f", "h"]) {
        let mut now = row(s, id).await;
        now.poll.next_poll_at = r.poll.next_poll_at;
        assert_eq!(&now, r, "{id}: only the next poll may change");
    }
    let again = s
        .poll_sooner(sooner(Some("srv"), true, 12, 1))
        .await
        .unwrap();
    assert_eq!(
        again,
        PolledSooner::default(),
        "a page starts after the last"
    );
    let every = s.poll_sooner(sooner(None, false, 12, 2)).await.unwrap();
    assert_eq!(
        every,
        PolledSooner {
            selected: 2,
            moved: 2
        }
    );
    assert_eq!(row(s, "d").await.poll.next_poll_at, Some(t(12)));
    assert_eq!(row(s, "c").await.poll.next_poll_at, Some(t(14)));
    assert_eq!(row(s, "h").await.poll.next_poll_at, Some(t(7_000)));
    assert_eq!(row(s, "f").await.poll.next_poll_at, Some(t(4_000)));
    let late = s.poll_sooner(sooner(None, false, 1, 60)).await.unwrap();
    assert_eq!(
        late,
        PolledSooner {
            selected: 5,
            moved: 1
        }
    );
    assert_eq!(row(s, "e").await.poll.next_poll_at, Some(t(1)));
    assert_eq!(
        row(s, "b").await.poll.next_poll_at,
        Some(t(10)),
        "never moved later"
    );
    let too_many = PollSooner {
        limit: MAX_BATCH + 1,
        ..sooner(None, false, 1, 1)
    };
    assert!(matches!(
        s.poll_sooner(too_many).await,
        Err(StoreError::Invalid(_))
    ));
}
