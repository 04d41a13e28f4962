//! DOMAIN §1/§8 "sealed": a task whose remote id and driver data are planted secrets goes
//! through every path — submit, polls (errors echoing the secret, degraded, protocol errors
//! echoing it, input_required, completed with the secret in the result), cancel, launch, list,
//! detail, context — and no prompt, public shape, row dump, error or log line carries a secret.

mod support;

use support::*;
use tasklatch_core::engine::SubmitError;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::{DriverError, RunStatus};
use tasklatch_core::remote::ErrorClass;
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{CancelTarget, ClaimRequest, Store, StoreError};
use tasklatch_core::text::PublicTask;

/// What every secret planted here has in common.
const MARK: &str = "PLANTED-SECRET";

fn remote(tag: &str) -> String {
    format!("{REMOTE_SECRET}-{tag}")
}

/// Untrusted text echoing both secrets of the task `tag`.
fn echo(tag: &str, what: &str) -> String {
    format!("{what} for {} (session {DRIVER_SECRET})", remote(tag))
}

fn assert_sealed(what: &str, text: &str) {
    assert!(!text.contains(MARK), "{what} leaks a secret:\n{text}");
}

// ------------------------------------------------------------------------------------------
// every path
// ------------------------------------------------------------------------------------------

async fn submit_secret(
    w: &World,
    e: &TestEngine,
    tag: &str,
    first: Option<RemoteReport>,
) -> TaskId {
    w.submit(e, &format!("task {tag}"), &remote(tag), first)
        .await
}

#[tokio::test]
async fn no_secret_reaches_any_prompt_public_shape_row_dump_error_or_log_line() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());

    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let mut outputs: Vec<(String, String)> = Vec::new();

    // a: transient errors echoing the secrets (degraded), a rejection, input_required, completed
    let a = submit_secret(&w, &e, "a", None).await;
    let ra = remote("a");
    w.driver.on_status(
        &ra,
        [
            Err(unavailable(ErrorClass::Timeout, &echo("a", "timeout"))),
            Err(unavailable(ErrorClass::Server, &echo("a", "502"))),
            Err(DriverError::Rejected(echo("a", "403"))),
            Err(unavailable(ErrorClass::Connection, &echo("a", "reset"))),
            Ok(RemoteReport {
                input_request: Some(echo("a", "please confirm")),
                ..report(&ra, "input_required")
            }),
            Ok(RemoteReport {
                result: Some(echo("a", "{\"answer\": 42}")),
                artifact: Some(echo("a", "s3://bucket/out")),
                ..report(&ra, "completed")
            }),
        ],
    );
    // b: malformed payload whose detail echoes the secrets
    let b = submit_secret(&w, &e, "b", None).await;
    w.driver.on_status(
        &remote("b"),
        [Err(DriverError::Malformed(echo("b", "bad json")))],
    );
    // c: a report about another task, with the secret in an unknown status
    let c = submit_secret(&w, &e, "c", None).await;
    w.driver.on_status(
        &remote("c"),
        [Ok(RemoteReport {
            error: Some(echo("c", "oops")),
            ..report(&remote("c"), &echo("c", "weird"))
        })],
    );
    // d: failed at submit with an error echoing the secrets
    let d = submit_secret(
        &w,
        &e,
        "d",
        Some(RemoteReport {
            error: Some(echo("d", "crashed")),
            ..report(&remote("d"), "failed")
        }),
    )
    .await;
    // f: cancelled; the first remote cancel is refused echoing the secrets (counted)
    let f = submit_secret(&w, &e, "f", Some(report(&remote("f"), "working"))).await;
    w.driver.on_cancel(
        &remote("f"),
        [
            Err(DriverError::Rejected(echo("f", "cancel refused"))),
            Ok(RemoteReport {
                error: Some(echo("f", "cancelled by user")),
                ..report(&remote("f"), "cancelled")
            }),
        ],
    );
    w.driver
        .on_status(&remote("f"), [Ok(report(&remote("f"), "working"))]);
    let out = e.cancel(&scope(), &CancelTarget::Id(f.clone())).await;
    outputs.push(("cancel outcome".into(), format!("{out:?}")));

    for _ in 0..10 {
        let pass = e.run_once().await;
        outputs.push(("pass report".into(), format!("{pass:?}")));
        w.advance(3_600);
    }

    // every path was taken
    assert_eq!(w.row(&a).await.remote.status, RemoteStatus::Completed);
    assert_eq!(w.row(&b).await.remote.status, RemoteStatus::Failed);
    assert_eq!(w.row(&c).await.remote.status, RemoteStatus::Failed);
    assert_eq!(w.row(&d).await.remote.status, RemoteStatus::Failed);
    assert_eq!(w.row(&f).await.remote.status, RemoteStatus::Cancelled);
    assert_eq!(w.row(&f).await.cancel.failures, 1);
    let a_starts = w.launcher.starts_for(&a);
    assert!(
        a_starts.len() >= 3,
        "degraded, input_required, completed: {a_starts:?}"
    );
    assert!(a_starts[0].0.prompt.contains("\"tracking_degraded\":true"));
    assert!(
        a_starts
            .iter()
            .any(|(r, _)| r.prompt.contains("[redacted]")),
        "echoes were cut out"
    );

    // prompts, as launched and as the ledger keeps them
    for (req, outcome) in w.launcher.starts() {
        outputs.push((format!("prompt {}", req.key), req.prompt.clone()));
        outputs.push(("run request".into(), format!("{req:?} {outcome:?}")));
    }
    for run in w.launcher.runs().await {
        outputs.push(("ledger run".into(), format!("{run:?}")));
    }
    // public shapes
    let listed = e.list(&scope()).await.expect("list");
    assert_eq!(listed.len(), 5);
    outputs.push(("list".into(), serde_json::to_string(&listed).expect("json")));
    outputs.push(("list debug".into(), format!("{listed:?}")));
    for id in [&a, &b, &c, &d, &f] {
        let detail = e.detail(&scope(), id).await.expect("detail");
        outputs.push((
            "detail".into(),
            serde_json::to_string(&detail).expect("json"),
        ));
        outputs.push(("detail debug".into(), format!("{detail:?}")));
    }
    let context = e.context(&scope()).await.expect("context");
    outputs.push((
        "context".into(),
        serde_json::to_string(&context).expect("json"),
    ));
    outputs.push(("context debug".into(), format!("{context:?}")));
    // rows: Debug, and every stored part except the handle itself
    for r in w.store.rows().await {
        outputs.push(("row debug".into(), format!("{r:?}")));
        outputs.push(("row debug (pretty)".into(), format!("{r:#?}")));
        outputs.push((
            "stored state".into(),
            serde_json::to_string(&(&r.remote, &r.poll, &r.outbox, &r.cancel)).expect("json"),
        ));
        if let Some(ev) = &r.outbox.event {
            outputs.push(("event".into(), ev.canonical_json()));
        }
        outputs.push(("public".into(), format!("{:?}", PublicTask::from_row(&r))));
    }
    outputs.push((
        "overview".into(),
        format!("{:?}", w.store.overview().await.expect("overview")),
    ));
    outputs.push((
        "api error".into(),
        format!("{:?}", e.detail(&scope_of("bob", THREAD), &a).await),
    ));
    outputs.push(("tracing".into(), capture.text()));

    assert!(
        capture.text().contains("launching"),
        "the capture saw the engine's log lines"
    );
    for (what, text) in &outputs {
        assert_sealed(what, text);
    }
}

#[tokio::test]
async fn claims_and_store_errors_never_show_a_secret() {
    let w = World::new();
    let e = w.engine("w1");
    let id = submit_secret(&w, &e, "a", None).await;
    for kind in LeaseKind::ALL {
        let claimed = w
            .store
            .claim(
                kind,
                ClaimRequest {
                    worker: "w1".into(),
                    now: w.now(),
                    lease_for: secs(60),
                    limit: 10,
                },
            )
            .await
            .expect("claim");
        assert_sealed("claims", &format!("{claimed:?} {claimed:#?}"));
    }
    assert_sealed("row", &format!("{:?}", w.row(&id).await.identity));
    // a duplicate submit of the same secret handle
    w.driver.on_submit(&remote("a"), None);
    let err = e
        .submit(&w.ids, w.command("again"))
        .await
        .expect_err("duplicate");
    assert_eq!(err, SubmitError::Duplicate);
    assert_sealed("submit error", &format!("{err} {err:?}"));
    let dup = w
        .store
        .insert_task(w.row(&id).await)
        .await
        .expect_err("duplicate row");
    assert_sealed("store error", &format!("{dup} {dup:?}"));
}

#[tokio::test]
async fn a_failed_submit_and_its_compensation_never_show_a_secret() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let w = World::new();
    let e = w.engine("w1");
    w.store
        .set_handle_fault(InsertFault::Fail(StoreError::Invalid("row refused".into())));
    w.driver.on_submit(&remote("z"), None);
    w.driver.on_cancel(
        &remote("z"),
        [
            Err(unavailable(
                ErrorClass::Timeout,
                &echo("z", "cancel timeout"),
            )),
            Err(DriverError::Rejected(echo("z", "cancel refused"))),
        ],
    );
    let err = e
        .submit(&w.ids, w.command("zeta"))
        .await
        .expect_err("not persisted");
    assert_sealed("submit error", &format!("{err} {err:?}"));
    for _ in 0..4 {
        let pass = e.run_once().await;
        assert_sealed("pass", &format!("{pass:?}"));
    }
    assert!(w.driver.cancel_calls(&remote("z")) >= 2);
    let logs = capture.text();
    assert!(logs.contains("compensating cancel failed"), "{logs}");
    assert_sealed("tracing", &logs);
}
