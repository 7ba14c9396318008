//! The bound on one Redis call: the Redis timeout of the node's own running time
//! (PROTOCOL.md 8.1).
//!
//! A node whose threads wait for a CPU (a machine running more than it has cores: issue 38's
//! million, 65 busy processes on 2 cores) may find a call's answer in its socket long after
//! Redis sent it. A bound on wall time alone counts that wait against Redis, and a storm of
//! connects or disconnects then fails whole batches of claims and releases that Redis had
//! answered in a few milliseconds. So the bound gives back the time the node itself lost: the
//! call's check wakes every [`step`](Bound::step) and each wake that comes late (the runtime
//! did not run it on time) moves the deadline by that lateness, up to
//! [`ClusterConfig::redis_timeout_most`] in all. A node that runs on time adds nothing: Redis
//! down, stopped or cut off still fails a call at the Redis timeout.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::{ClusterConfig, ClusterError};

/// How long one Redis call may take: the Redis timeout, plus the node's own stall while it
/// waited, up to `most`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    timeout: Duration,
    most: Duration,
}

impl Bound {
    /// The bound of `config` ([`ClusterConfig::redis_timeout`],
    /// [`ClusterConfig::redis_timeout_most`]).
    pub(crate) fn of(config: &ClusterConfig) -> Self {
        Self {
            timeout: config.redis_timeout,
            most: config.redis_timeout_most(),
        }
    }

    /// How often a waiting call looks at the clock: a tenth of the timeout, at most 50 ms and
    /// at least 1 ms (the timer's resolution, whose lateness each look may add).
    fn step(&self) -> Duration {
        (self.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(50))
    }

    /// Runs `work` within the bound: its value, its Redis error, or
    /// [`ClusterError::RedisTimeout`] with how long it waited and how much of that the node
    /// itself was stalled.
    pub(crate) async fn run<T>(
        self,
        work: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ClusterError> {
        let start = Instant::now();
        let step = self.step();
        let mut stalled = Duration::ZERO;
        let mut deadline = start + self.timeout;
        let mut look = (start + step).min(deadline);
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                done = &mut work => return done.map_err(ClusterError::Redis),
                () = tokio::time::sleep_until(look) => {}
            }
            let now = Instant::now();
            stalled += now.saturating_duration_since(look);
            deadline = start + (self.timeout + stalled).min(self.most);
            if now >= deadline {
                return Err(ClusterError::RedisTimeout {
                    waited: now - start,
                    stalled,
                });
            }
            look = (now + step).min(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bound of `timeout`, at most `most`.
    fn bound(timeout: u64, most: u64) -> Bound {
        Bound {
            timeout: Duration::from_millis(timeout),
            most: Duration::from_millis(most),
        }
    }

    /// Work that answers `after` from now, on a thread of its own (wall time: it goes on
    /// while the runtime's thread is blocked).
    fn answer_after(after: Duration) -> impl Future<Output = redis::RedisResult<u32>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let _ = tx.send(7);
        });
        async move { Ok(rx.await.unwrap_or(0)) }
    }

    /// Blocks the runtime's only thread for `long`, `after` from now: the node's own stall.
    async fn stall(after: Duration, long: Duration) {
        tokio::time::sleep(after).await;
        std::thread::sleep(long);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_in_time_is_taken() {
        let answer = bound(2_000, 8_000).run(answer_after(Duration::from_millis(20)));
        assert_eq!(answer.await.ok(), Some(7));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn no_answer_times_out_at_the_timeout_when_the_node_runs_on_time() {
        let start = std::time::Instant::now();
        let never = std::future::pending::<redis::RedisResult<u32>>();
        let outcome = bound(300, 1_200).run(never).await;
        let waited = start.elapsed();
        match outcome {
            Err(ClusterError::RedisTimeout { waited: said, .. }) => {
                assert!(said >= Duration::from_millis(300), "{said:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        // Not stretched to the most: nothing stalled the node.
        assert!(waited < Duration::from_millis(1_200), "{waited:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_node_s_own_stall_is_given_back() {
        // The answer comes 1.1 s after the call, past the 400 ms timeout; the node's thread was
        // blocked for 1 s of it, so the call had well under 400 ms of its own time.
        let call = bound(400, 1_600).run(answer_after(Duration::from_millis(1_100)));
        let (answer, ()) = tokio::join!(
            call,
            stall(Duration::from_millis(50), Duration::from_millis(1_000))
        );
        assert_eq!(answer.ok(), Some(7));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stall_gives_back_no_more_than_the_most() {
        let start = std::time::Instant::now();
        let never = std::future::pending::<redis::RedisResult<u32>>();
        let call = bound(200, 600).run(never);
        let (outcome, ()) = tokio::join!(
            call,
            stall(Duration::from_millis(20), Duration::from_millis(2_000))
        );
        match outcome {
            Err(ClusterError::RedisTimeout { stalled, .. }) => {
                assert!(stalled >= Duration::from_millis(1_000), "{stalled:?}");
            }
            other => panic!("{other:?}"),
        }
        // The stall ended at about 2 s, past the most: the first look after it fails the call.
        assert!(start.elapsed() < Duration::from_millis(2_600));
    }
}
