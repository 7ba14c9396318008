//! Memory per idle booted charge point of a whole server: the README example (`examples/csms.rs`,
//! a separate process) with 2,000 idle 2.0.1 charge points, its RSS read from /proc before and
//! after. Debug build; prints the figure (about 2.0 KB when written), and fails past 4 KiB (the
//! target is 3 KiB).
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::OcppVersion;

const WARM_UP: usize = 200;
const MEASURED: usize = 2000;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn connect_booted(
    addr: std::net::SocketAddr,
    from: usize,
    count: usize,
) -> Vec<WireChargePoint> {
    let mut all = Vec::new();
    for batch in (from..from + count).collect::<Vec<_>>().chunks(100) {
        let mut tasks = Vec::new();
        for &n in batch {
            tasks.push(tokio::spawn(async move {
                let identity = format!("MEM{n:05}");
                let mut cp = WireChargePoint::connect(addr, &identity, OcppVersion::V2_0_1)
                    .await
                    .unwrap();
                assert_eq!(cp.boot().await.unwrap(), "Accepted");
                cp
            }));
        }
        for task in tasks {
            all.push(task.await.unwrap());
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rss_per_idle_booted_charge_point() {
    let exe = std::env::current_exe().unwrap();
    let binary = exe
        .parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("examples")
        .join("csms");
    let mut child = Command::new(&binary)
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .parse()
        .unwrap();

    let warm = connect_booted(addr, 0, WARM_UP).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_kib(pid);
    let measured = connect_booted(addr, WARM_UP, MEASURED).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kib(pid);
    let per_cp = (after.saturating_sub(before)) as f64 * 1024.0 / MEASURED as f64;
    println!(
        "RSS {before} KiB with {WARM_UP} charge points, {after} KiB with {}: {per_cp:.0} bytes per \
         idle booted charge point (debug build)",
        WARM_UP + MEASURED
    );
    let _ = child.kill();
    let _ = child.wait();
    drop((warm, measured));
    assert!(per_cp < 4.0 * 1024.0, "{per_cp:.0} bytes per charge point");
}
