//! The conformance suite (DESIGN "One conformance suite, every store"): behavioural tests of
//! [`Store`](crate::store::Store) and [`RunLedger`](crate::ledger::RunLedger), written once,
//! that any implementation imports and runs — as River's driver test suite runs against every
//! driver. Only built with the `conformance` cargo feature (test code; no extra dependency).
//!
//! A store crate describes how to get a fresh store and how to give it back with a
//! [`Harness`], then instantiates every body as a `#[tokio::test]` with
//! [`store_conformance!`](crate::store_conformance) (and a ledger with
//! [`ledger_conformance!`](crate::ledger_conformance)):
//!
//! ```text
//! struct Pg { db: TestDb, store: PgStore }
//! impl tasklatch_core::conformance::Harness for Pg {
//!     type Subject = PgStore;
//!     async fn setup() -> Self { /* a fresh database, a store with `support::policy()` */ }
//!     fn subject(&self) -> &PgStore { &self.store }
//!     async fn cleanup(self) { self.db.cleanup().await }
//! }
//! mod pg { tasklatch_core::store_conformance!(super::Pg); }
//! ```
//!
//! The calling crate needs `tokio` (with the `macros` and `rt` features) among its
//! dev-dependencies. A body that fails panics before `cleanup`, as a failing test does.
//!
//! - [`claims`], [`poll`], [`poll_sooner`], [`notify`], [`cancel`], [`cancel_outage`],
//!   [`release`], [`requeue`], [`views`], [`retention`]: the store bodies.
//! - [`hand_off`]: a poll write that opens the channel claims the notification itself.
//! - [`cancel_watch`]: a cancel acknowledged or dead-lettered leaves its task watched.
//! - [`answer`]: answers to input requests.
//! - [`submit`]: settling a submit's intent.
//! - [`ledger`]: the run ledger bodies.
//! - [`support`]: the builders they share.

pub mod answer;
pub mod cancel;
pub mod cancel_outage;
pub mod cancel_watch;
pub mod claims;
pub mod hand_off;
pub mod ledger;
pub mod notify;
pub mod poll;
pub mod poll_sooner;
pub mod release;
pub mod requeue;
pub mod retention;
pub mod submit;
pub mod support;
pub mod views;

use std::future::Future;

/// How one test gets a fresh, empty subject (a store or a ledger) and gives it back.
pub trait Harness: Sized {
    /// What the bodies exercise: a `Store` for the store suite, a `RunLedger` for the ledger
    /// suite. A store must use [`support::policy`].
    type Subject;

    /// A fresh, empty subject and whatever it needs (a new database, say).
    fn setup() -> impl Future<Output = Self>;

    /// The subject under test.
    fn subject(&self) -> &Self::Subject;

    /// Releases what `setup` took (drops the database, say). Runs after a body that passed.
    fn cleanup(self) -> impl Future<Output = ()>;
}

/// Instantiates every store body of the suite as a `#[tokio::test]` in the calling module, for
/// the store of the given [`Harness`] type (`Subject: Store`). Test names are the bodies'.
#[macro_export]
macro_rules! store_conformance {
    ($harness:ty) => {
        $crate::__conformance_tests!($harness;
            claims::claim_orders_by_due_then_id_and_limits,
            claims::claim_skips_leased_rows_and_reclaims_expired_with_fresh_tokens,
            claims::claim_skips_rows_not_due_and_non_pollable,
            poll::poll_guard_refusals_in_order,
            poll::poll_write_records_new_version_and_opens_channel,
            poll::repoll_of_unchanged_state_records_nothing,
            poll::attention_cleared_drops_undelivered_version,
            hand_off::poll_write_claims_the_notification_it_opens,
            hand_off::no_hand_off_while_a_dispatch_is_in_flight,
            notify::new_version_while_in_flight_does_not_overwrite_snapshot,
            notify::notify_claim_freezes_snapshot_and_keeps_dispatched_run,
            notify::notify_launched_then_pending_then_succeeded,
            notify::notify_busy_is_not_a_failure_and_rebuilds_snapshot,
            notify::notify_thread_gone_dead_letters,
            notify::notify_launch_failed_retries_same_attempt,
            notify::notify_run_failed_bumps_attempt,
            notify::notify_lookup_unavailable_waits_uncounted,
            notify::notify_launch_unavailable_keeps_key_and_budget,
            notify::notify_budget_exhausted_with_newer_version_reopens,
            notify::notify_succeeded_with_newer_version_reopens,
            notify::notify_guard_refusals,
            cancel::cancel_request_records_intent_once,
            cancel::cancel_request_scoping_and_names,
            cancel::cancel_claim_and_finish,
            cancel::cancel_failed_counts_and_budget_dead_letters,
            cancel::cancel_finished_on_terminal_task_keeps_state,
            cancel_outage::cancel_unavailable_waits_uncounted,
            cancel_outage::cancel_requeue_reissues_a_dead_letter,
            poll_sooner::poll_sooner_brings_backed_off_polls_forward_spread,
            cancel_watch::cancel_acknowledged_is_polled_until_terminal,
            cancel_watch::cancel_dead_letter_is_polled_until_end_delivered,
            cancel_watch::cancel_ended_refuses_stale_poll,
            release::releases_of_each_kind,
            release::batch_outcomes_in_order_with_repeated_tasks,
            views::scoping_of_list_and_get,
            views::list_stops_at_its_limit_in_either_order,
            views::insert_rejects_duplicates_and_invalid_rows,
            views::hostile_text_is_storable,
            views::overview_counts,
            views::admin_rows_pages_in_id_order,
            requeue::requeue_redelivers_the_latest_event_with_a_fresh_budget,
            requeue::requeue_leaves_everything_else_untouched,
            requeue::requeue_of_a_dead_letter_with_nothing_to_say_changes_nothing,
            answer::answer_scope_bound_and_asked,
            answer::answer_second_refused,
            answer::answer_stale_lease_refused,
            answer::answer_at_most_once,
            answer::answer_earlier_question_refused_after_another,
            retention::prune_deletes_only_settled_finished_rows,
            retention::prune_in_bounded_batches_oldest_first,
            retention::prune_ages_from_settling_and_keeps_fresh_dead_letters,
            submit::intent_records_its_handle_once_and_withdraws,
            submit::a_late_handle_tracked_elsewhere_is_a_duplicate,
        );
    };
}

/// Instantiates every run ledger body of the suite as a `#[tokio::test]` in the calling
/// module, for the ledger of the given [`Harness`] type (`Subject: RunLedger`).
#[macro_export]
macro_rules! ledger_conformance {
    ($harness:ty) => {
        $crate::__conformance_tests!($harness;
            ledger::ledger_same_key_same_run,
            ledger::ledger_busy_thread_409,
            ledger::ledger_missing_deleted_foreign_thread_404,
            ledger::ledger_finish_run_and_status,
        );
    };
}

/// One `#[tokio::test]` per body: set up, run the body on the subject, clean up.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($harness:ty; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[::tokio::test]
            async fn $name() {
                let harness = <$harness as $crate::conformance::Harness>::setup().await;
                $crate::conformance::$module::$name(
                    $crate::conformance::Harness::subject(&harness),
                )
                .await;
                $crate::conformance::Harness::cleanup(harness).await;
            }
        )*
    };
}
