//! What [`Csms::on_call`](super::Csms::on_call) gives back: the answer now, or work to do off
//! the I/O loop first.
//!
//! Most CALLs are answered from memory in microseconds, under the CSMS's lock, on the thread
//! that read them. Some answers wait for something slow: a commit to the database (a
//! transaction's start or end is saved before it is answered), or a round trip to another
//! server (an OCSP responder, a contract-certificate service). An event loop that holds
//! thousands of charge points must not wait for those, so the CSMS hands the loop a
//! [`Later`]: a job to run on a worker thread, whose result is the answer. Each server decides
//! where jobs run (mio-server: its worker pool; tokio-server: `spawn_blocking`) and sends the
//! answer when the job returns; the rule of what to do and how to answer stays here, once.
//!
//! A job bounds its own time (its network calls have timeouts, the store's commit waits at
//! most its `DATABASE_WAIT`), so every CALL still gets exactly one answer.

use std::fmt;

use ocpp_proto::Answer;

use super::Csms;

/// The CSMS's answer to a CALL: ready now, or after work the I/O loop must not wait for.
///
/// ```
/// use ocpp_reference_csms::{Csms, CsmsConfig, Answering};
/// use ocpp_messages::{v1_6, version::OcppVersion};
/// use ocpp_proto::{Answer, ChargePointIdentity, Request};
///
/// let csms = Csms::new(CsmsConfig::default());
/// let identity = ChargePointIdentity::new("CP001".into(), false).unwrap();
/// let session = csms.on_connected(&identity, OcppVersion::V1_6);
/// let heartbeat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
/// let answer = match csms.on_call(session, &identity, &heartbeat) {
///     Answering::Now(answer) => answer,
///     // An I/O loop runs this on a worker thread and answers when it returns.
///     Answering::Later(later) => later.run(&csms),
/// };
/// assert!(answer.is_result());
/// ```
#[derive(Debug)]
pub enum Answering {
    /// The answer, ready now.
    Now(Answer),
    /// Work to run off the I/O loop; its result is the answer.
    Later(Later),
}

impl Answering {
    /// The answer, running a [`Later`] job on this thread (it may block: for tests and for
    /// callers that are not an event loop).
    ///
    /// ```
    /// use ocpp_reference_csms::{Csms, CsmsConfig, Answering};
    /// use ocpp_proto::Answer;
    /// let csms = Csms::new(CsmsConfig::default());
    /// let reply = Answering::Now(Answer::not_supported("Reset"));
    /// assert!(!reply.wait(&csms).is_result());
    /// ```
    pub fn wait(self, csms: &Csms) -> Answer {
        match self {
            Answering::Now(answer) => answer,
            Answering::Later(later) => later.run(csms),
        }
    }
}

impl From<Answer> for Answering {
    fn from(answer: Answer) -> Self {
        Answering::Now(answer)
    }
}

/// A job whose result answers a CALL, to run on a thread that may block.
pub struct Later(Box<dyn FnOnce(&Csms) -> Answer + Send>);

impl Later {
    /// Wraps `job`. It gets the CSMS to record what it found (it may take its lock); it must
    /// bound its own time.
    ///
    /// ```
    /// use ocpp_reference_csms::{Csms, CsmsConfig, Later};
    /// use ocpp_proto::Answer;
    /// let later = Later::new(|_csms: &Csms| Answer::not_supported("Reset"));
    /// assert!(!later.run(&Csms::new(CsmsConfig::default())).is_result());
    /// ```
    pub fn new(job: impl FnOnce(&Csms) -> Answer + Send + 'static) -> Self {
        Later(Box::new(job))
    }

    /// Runs the job (it may block) and returns the answer.
    pub fn run(self, csms: &Csms) -> Answer {
        (self.0)(csms)
    }
}

impl fmt::Debug for Later {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Later(..)")
    }
}
