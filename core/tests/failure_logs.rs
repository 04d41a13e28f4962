//! Every failure the engine meets is logged with the task it happened to (an operator greps
//! the logs by task id): a failed launch, a failed run, an unanswered remote cancel, polls that keep
//! failing (degraded), a report that breaks the protocol, a thread gone, a spent budget.

mod support;

use support::*;
use tasklatch_core::ids::TaskId;
use tasklatch_core::ports::{DriverError, LaunchOutcome, RunStatus};
use tasklatch_core::remote::ErrorClass;
use tasklatch_core::store::CancelTarget;

/// The warning lines of `logs` that contain `message`.
fn warnings<'a>(logs: &'a str, message: &str) -> Vec<&'a str> {
    logs.lines()
        .filter(|l| l.starts_with("WARN") && l.contains(message))
        .collect()
}

fn assert_logged_for(logs: &str, message: &str, task: &TaskId) {
    let lines = warnings(logs, message);
    assert!(!lines.is_empty(), "no warning {message:?} in:\n{logs}");
    let field = format!("task={task} ");
    assert!(
        lines.iter().all(|l| l.contains(&field)),
        "{message:?} without {field:?}: {lines:?}"
    );
}

#[tokio::test]
async fn each_failure_is_logged_with_its_task() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let w = World::with_thread().await;
    let e = w.engine("w1");

    let launch = w
        .submit(&e, "l", "rt-l", Some(completed("rt-l", "1")))
        .await;
    w.launcher
        .script_starts(&launch, [LaunchOutcome::Failed("gateway 502".into())]);
    let run = w
        .submit(&e, "r", "rt-r", Some(completed("rt-r", "1")))
        .await;
    w.launcher.finish_new_runs([RunStatus::Error]);
    // Every later run delivers (none is left running past max_run_life to be interrupted).
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let cancel = w
        .submit(&e, "c", "rt-c", Some(report("rt-c", "working")))
        .await;
    w.driver
        .on_cancel("rt-c", [Err(unavailable(ErrorClass::Server, "502"))]);
    e.cancel(&scope(), &CancelTarget::Id(cancel.clone()))
        .await
        .unwrap();
    let degraded = w.submit(&e, "d", "rt-d", None).await;
    w.driver
        .on_status("rt-d", [Err(unavailable(ErrorClass::Timeout, "slow"))]);
    let broken = w.submit(&e, "b", "rt-b", None).await;
    w.driver.on_status("rt-b", [Err(DriverError::UnknownTask)]);

    for _ in 0..4 {
        w.advance(600);
        e.run_once().await;
    }
    let logs = capture.text();
    assert_logged_for(&logs, "notification launch failed", &launch);
    assert_logged_for(&logs, "notification run failed", &run);
    assert_logged_for(
        &logs,
        "remote server unavailable: the cancel waits it out",
        &cancel,
    );
    assert_logged_for(&logs, "tracking degraded", &degraded);
    assert_logged_for(&logs, "broke the protocol", &broken);
}
