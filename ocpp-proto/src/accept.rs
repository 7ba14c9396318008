//! What a server's accept loop does when `accept` fails, decided once for every driver (the
//! mio loop, ocpp-tokio's server, the admin listeners).
//!
//! Out of descriptors or memory (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`), accepting again at
//! once would spin: the kernel keeps the connection in the listen backlog, and the loop waits
//! [`ACCEPT_RETRY`] before it tries again. Anything else concerns the one connection that was
//! being accepted (reset or aborted before it was taken, a protocol error): the loop goes on
//! at once with the next.

use std::io;
use std::time::Duration;

/// How long an accept loop waits after running out of descriptors or memory.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// What to do after a failed `accept` ([`after_accept_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptRetry {
    /// Try the next connection at once (the error was that one connection's).
    Now,
    /// Wait this long before accepting again (out of descriptors or memory; the connection
    /// waits in the backlog).
    After(Duration),
}

/// What an accept loop does after `error` (a `WouldBlock` is not an error here: the caller
/// waits for readiness as usual).
///
/// ```
/// use std::io;
/// use ocpp_proto::accept::{after_accept_error, AcceptRetry, ACCEPT_RETRY};
///
/// let emfile = io::Error::from_raw_os_error(24);
/// assert_eq!(after_accept_error(&emfile), AcceptRetry::After(ACCEPT_RETRY));
/// let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
/// assert_eq!(after_accept_error(&aborted), AcceptRetry::Now);
/// ```
pub fn after_accept_error(error: &io::Error) -> AcceptRetry {
    if is_resource_exhaustion(error) {
        AcceptRetry::After(ACCEPT_RETRY)
    } else {
        AcceptRetry::Now
    }
}

/// Out of descriptors or memory: accepting again at once would spin.
fn is_resource_exhaustion(error: &io::Error) -> bool {
    if error.kind() == io::ErrorKind::OutOfMemory {
        return true;
    }
    // The Linux numbers (the servers run there); other systems fall back to `OutOfMemory`.
    matches!(
        error.raw_os_error(),
        Some(23 /* ENFILE */ | 24 /* EMFILE */ | 12 /* ENOMEM */ | 105 /* ENOBUFS */)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_waits_anything_else_goes_on() {
        for errno in [12, 23, 24, 105] {
            let error = io::Error::from_raw_os_error(errno);
            assert_eq!(
                after_accept_error(&error),
                AcceptRetry::After(ACCEPT_RETRY),
                "{errno}"
            );
        }
        for kind in [
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::Interrupted,
        ] {
            assert_eq!(after_accept_error(&io::Error::from(kind)), AcceptRetry::Now);
        }
        let oom = io::Error::from(io::ErrorKind::OutOfMemory);
        assert_eq!(after_accept_error(&oom), AcceptRetry::After(ACCEPT_RETRY));
    }
}
