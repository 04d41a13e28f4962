//! A claim asks for at most `policy::MAX_BATCH` rows: a larger limit is refused as invalid input
//! (it used to reach Postgres as `LIMIT 9223372036854775807`), and the refusal changes nothing.

mod support;

use support::{claim, ids, policy, req, submitted, t};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::MAX_BATCH;
use tasklatch_core::store::{Store, StoreError};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;

#[tokio::test]
async fn a_claim_above_the_batch_limit_is_invalid_and_claims_nothing() {
    let db = TestDb::create().await;
    let s = PgStore::new(db.pool().clone(), policy());
    s.insert_task(submitted("a", t(0))).await.unwrap();
    for kind in LeaseKind::ALL {
        for limit in [MAX_BATCH + 1, usize::MAX] {
            let refused = s.claim(kind, req("w", t(0), limit)).await;
            assert!(
                matches!(refused, Err(StoreError::Invalid(_))),
                "{kind:?} limit {limit}: {refused:?}"
            );
        }
    }
    let at_the_limit = claim(&s, LeaseKind::Poll, "w", t(0), MAX_BATCH).await;
    assert_eq!(
        ids(&at_the_limit),
        ["a"],
        "the refused claims leased nothing"
    );
    assert_eq!(
        at_the_limit[0].lease.token.0, 1,
        "the first claim of the row"
    );
    db.cleanup().await;
}
