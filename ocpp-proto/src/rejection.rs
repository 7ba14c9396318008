//! The application's refusal of a charge point's upgrade request.

/// Why the application refuses an upgrade: the HTTP status sent
/// ([`Connection::reject`](crate::Connection::reject)) and, for the log, the reason.
///
/// ```
/// use ocpp_proto::Rejection;
/// let refused = Rejection::UNAUTHORIZED.because("wrong password");
/// assert_eq!((refused.status, refused.reason), (401, "wrong password"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("upgrade refused with {status}: {reason}")]
#[non_exhaustive]
pub struct Rejection {
    /// The HTTP status sent.
    pub status: u16,
    /// Why, for the log (never sent).
    pub reason: &'static str,
    /// `Retry-After` in seconds (RFC 9110 §10.2.3), sent with the status when set (429,
    /// 503).
    pub retry_after: Option<u32>,
}

impl Rejection {
    /// 401: missing or bad Basic credentials (security profiles 1 and 2).
    pub const UNAUTHORIZED: Rejection = Rejection::new(401, "unauthorized");
    /// 403: the client certificate does not belong to this identity (security profile 3).
    pub const FORBIDDEN: Rejection = Rejection::new(403, "forbidden");
    /// 404: unknown identity (OCPP-J 1.6 §3.1, 2.0.1 Part 4 §3.1: SHOULD).
    pub const NOT_FOUND: Rejection = Rejection::new(404, "unknown identity");

    /// A refusal with this status and reason.
    pub const fn new(status: u16, reason: &'static str) -> Self {
        Rejection {
            status,
            reason,
            retry_after: None,
        }
    }

    /// The same refusal, telling the client to wait `seconds` before trying again.
    ///
    /// ```
    /// use ocpp_proto::Rejection;
    /// let busy = Rejection::new(429, "too many failed attempts").with_retry_after(30);
    /// assert_eq!(busy.retry_after, Some(30));
    /// ```
    pub const fn with_retry_after(self, seconds: u32) -> Self {
        Rejection {
            retry_after: Some(seconds),
            ..self
        }
    }

    /// The same status, with another reason.
    pub const fn because(self, reason: &'static str) -> Self {
        Rejection { reason, ..self }
    }
}
