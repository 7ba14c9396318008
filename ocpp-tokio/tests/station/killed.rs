//! The file store across a killed station process (the test re-executes itself as the station).

use super::*;

// ---------------------------------------------------------------------------------------------
// 5. The file store across a killed station process.

const CHILD_URL: &str = "OCPP_STATION_CHILD_URL";
const CHILD_JOURNAL: &str = "OCPP_STATION_CHILD_JOURNAL";
const CHILD_FIRST: &str = "OCPP_STATION_CHILD_FIRST";
const CHILD_COUNT: &str = "OCPP_STATION_CHILD_COUNT";

/// The station process of `the_file_store_survives_a_killed_station_process`: run only as its
/// child (the environment says what to do). Queues TransactionEvents with seqNo `FIRST..`,
/// printing `queued N` after each, then runs until its stdin closes.
#[test]
#[ignore = "the child process of the_file_store_survives_a_killed_station_process"]
fn child_station() {
    let (Ok(url), Ok(journal), Ok(first), Ok(count)) = (
        std::env::var(CHILD_URL),
        std::env::var(CHILD_JOURNAL),
        std::env::var(CHILD_FIRST),
        std::env::var(CHILD_COUNT),
    ) else {
        return;
    };
    let first: i32 = first.parse().unwrap();
    let count: i32 = count.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let station = station_at(&url, OcppVersion::V2_0_1)
            .store(FileStore::open(&journal).unwrap())
            .connect()
            .unwrap();
        for seq_no in first..first + count {
            station.queue(transaction_event(seq_no)).await.unwrap();
            println!("queued {seq_no}");
        }
        println!("ready");
        // Until the parent closes stdin (or kills this process).
        let (closed_tx, closed) = oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
            let _ = closed_tx.send(());
        });
        let _ = closed.await;
        station.close();
        station.stopped().await.unwrap();
        println!("closed");
    });
}

/// A child station process and its stdout lines.
struct ChildStation {
    process: Killed,
    lines: mpsc::UnboundedReceiver<String>,
}

impl ChildStation {
    fn spawn(url: &str, journal: &std::path::Path, first: i32, count: i32) -> ChildStation {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "killed::child_station",
                "--nocapture",
                "--ignored",
            ])
            .env(CHILD_URL, url)
            .env(CHILD_JOURNAL, journal)
            .env(CHILD_FIRST, first.to_string())
            .env(CHILD_COUNT, count.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        ChildStation {
            process: Killed(child),
            lines,
        }
    }

    /// Waits for a line that ends with `expected`.
    async fn expect_line(&mut self, expected: &str) {
        bounded(expected, async {
            loop {
                match self.lines.recv().await {
                    // (libtest may print `test killed::child_station ... ` before the first line.)
                    Some(line) if line.trim_end().ends_with(expected) => return,
                    Some(_) => {}
                    None => panic!("the child ended before printing {expected:?}"),
                }
            }
        })
        .await;
    }

    fn kill(mut self) {
        self.process.0.kill().unwrap();
        self.process.0.wait().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_store_survives_a_killed_station_process() {
    let journal = journal_path();
    let seen: Arc<Mutex<Vec<(i32, String)>>> = Arc::default();

    // Round 1: nobody listens; 5 messages queued, then SIGKILL.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let mut child = ChildStation::spawn(&format!("ws://{dead_addr}/ocpp/FILE"), &journal, 1, 5);
    child.expect_line("queued 5").await;
    child.kill();
    assert!(std::fs::metadata(&journal).unwrap().len() > 0);

    // Round 2: a CSMS that answers seqNo 1..=5 and never the 6th; 3 more queued (6..=8); the
    // process is killed once the CSMS has the 6th.
    let recording = |answer_from_6: bool| {
        accepting(Router::<()>::default()).on(with(
            &seen,
            move |seen, _, request: v2_0_1::TransactionEventRequest| async move {
                let json = serde_json::to_string(&request).unwrap();
                seen.lock().unwrap().push((request.seq_no, json));
                if request.seq_no >= 6 && !answer_from_6 {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok(transaction_event_answer())
            },
        ))
    };
    let csms = Csms::start(recording(false)).await;
    let mut child = ChildStation::spawn(&csms.url("FILE"), &journal, 6, 3);
    child.expect_line("queued 8").await;
    eventually("the CSMS has the 6th", || {
        seen.lock().unwrap().iter().any(|(seq, _)| *seq == 6)
    })
    .await;
    child.kill();
    assert_eq!(seq_nos(&seen.lock().unwrap()), [1, 2, 3, 4, 5, 6]);
    csms.stop().await;

    // Round 3: a normal CSMS; nothing new queued; everything left is delivered.
    let csms = Csms::start(recording(true)).await;
    let mut child = ChildStation::spawn(&csms.url("FILE"), &journal, 9, 0);
    child.expect_line("ready").await;
    eventually("all 8 seqNos", || {
        seen.lock().unwrap().iter().any(|(seq, _)| *seq == 8)
    })
    .await;
    eventually("the journal is empty", || {
        std::fs::metadata(&journal).is_ok_and(|m| m.len() == 0)
    })
    .await;
    // Close the child's stdin: it closes its station and exits.
    drop(child.process.0.stdin.take());
    child.expect_line("closed").await;
    let status = bounded("the child's exit", async {
        loop {
            if let Some(status) = child.process.0.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(status.success(), "{status:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seq_nos(&seen), [1, 2, 3, 4, 5, 6, 6, 7, 8]);
    assert_repeats_identical(&seen);
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
    csms.stop().await;
    let _ = std::fs::remove_file(&journal);
}
