//! `lineup`, the operator's console, run as a process against the local stack.

use lineup_tests::cli::run_cli;
use lineup_tests::TestApp;

use crate::local_stack::serve;

#[tokio::test]
async fn queue_show_reads_the_summary_from_the_local_stack() {
    let app = TestApp::spawn(&[]).await;
    let (addr, _server) = serve(&app).await;
    let url = format!("http://{addr}");
    let ran = run_cli(&["--url", &url, "--json", "queue", "show", "cli-q1"], &[], None).await.expect(0);
    assert_eq!(ran.json()["queueId"], "cli-q1");
}
