//! A process's resident memory and CPU time, read from `/proc`.

use std::time::Duration;

/// RSS and CPU time of one or more processes at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sample {
    /// Resident set size, bytes (summed over the processes).
    pub(crate) rss: u64,
    /// The anonymous part of `rss` (`RssAnon`: heap, stacks, the process's own data), bytes.
    /// The rest is mostly the executable's and the libraries' pages, mapped from their files
    /// once touched: a fixed cost of the process, whatever the number of connections.
    pub(crate) anon: u64,
    /// User + system CPU time (summed).
    pub(crate) cpu: Duration,
    /// The system (kernel) part of `cpu`: system calls, and on loopback the receiving side's
    /// TCP processing and wake-up of every segment sent.
    pub(crate) system: Duration,
    /// How many of the processes could be read.
    pub(crate) alive: usize,
}

fn ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}

/// (user + system, system) CPU time from the text of `/proc/PID/stat`.
fn cpu_from_stat(stat: &str) -> Option<(Duration, Duration)> {
    // The command name (field 2) may hold spaces and parentheses: fields are counted after
    // the last ')'. utime and stime are fields 14 and 15, i.e. the 12th and 13th after it.
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let per_second = ticks_per_second();
    let time = |ticks: u64| {
        Duration::from_secs(ticks / per_second)
            + Duration::from_nanos((ticks % per_second) * 1_000_000_000 / per_second)
    };
    Some((time(utime + stime), time(stime)))
}

/// A `kB` field of `/proc/PID/status` (`VmRSS:`, `RssAnon:`...), in bytes.
fn kib_from_status(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `VmRSS` from the text of `/proc/PID/status`, in bytes.
fn rss_from_status(status: &str) -> Option<u64> {
    kib_from_status(status, "VmRSS:")
}

/// Reads one process (`"self"` or a PID): (RSS, its anonymous part, CPU times).
fn read(pid: &str) -> Option<(u64, u64, (Duration, Duration))> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let anon = kib_from_status(&status, "RssAnon:").unwrap_or(0);
    Some((rss_from_status(&status)?, anon, cpu_from_stat(&stat)?))
}

/// Samples the processes `pids` (summed).
pub(crate) fn sample(pids: &[u32]) -> Sample {
    let mut total = Sample::default();
    for pid in pids {
        if let Some((rss, anon, (cpu, system))) = read(&pid.to_string()) {
            total.rss += rss;
            total.anon += anon;
            total.cpu += cpu;
            total.system += system;
            total.alive += 1;
        }
    }
    total
}

/// This process's CPU time so far.
pub(crate) fn own_cpu() -> Duration {
    read("self").map_or(Duration::ZERO, |(_, _, (cpu, _))| cpu)
}

/// Whether the process still runs: one of its threads is not a zombie. The leader of a
/// multi-threaded process shows `Z` while its other threads still exit and still hold its
/// descriptors (a listening socket among them), so the leader alone does not tell.
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            stat.rfind(')')
                .and_then(|i| stat[i + 1..].split_ascii_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_names() {
        let ticks = ticks_per_second();
        let stat = format!(
            "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 {} {} 0 0 20 0 1 0 5 1000 200",
            ticks * 2,
            ticks / 2
        );
        assert_eq!(
            cpu_from_stat(&stat),
            Some((Duration::from_millis(2500), Duration::from_millis(500)))
        );
    }

    #[test]
    fn parses_status() {
        let status =
            "Name:\tx\nVmPeak:\t  10 kB\nVmRSS:\t    2048 kB\nRssAnon:\t  512 kB\nThreads: 1\n";
        assert_eq!(rss_from_status(status), Some(2 * 1024 * 1024));
        assert_eq!(kib_from_status(status, "RssAnon:"), Some(512 * 1024));
    }

    #[test]
    fn reads_itself() {
        let me = sample(&[std::process::id()]);
        assert_eq!(me.alive, 1);
        assert!(me.rss > 0);
        assert!(me.anon > 0 && me.anon <= me.rss);
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX - 1));
    }
}
