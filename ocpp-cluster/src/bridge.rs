//! The non-async face, for an event loop that must never block (the mio server): the cluster
//! runs on its own thread with its own tokio runtime; the loop hands it requests without
//! waiting (a bounded channel, `try_send`) and drains what comes back (a channel, plus a wake
//! callback the loop implements with `mio::Waker::wake`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use ocpp_proto::OcppVersion;

use crate::cluster::lock;
use crate::executor::BoxFuture;
use crate::{
    CallFailure, Claim, ClaimTicket, Cluster, ClusterConfig, ClusterError, ClusterEvent, Executor,
    JsonCallOutcome,
};

/// How many requests may wait for the cluster thread before [`BridgeError::Full`]: commands,
/// listings, refreshes, a drain. Claims and releases do not count: they have a queue of their
/// own, unbounded because a connection makes one of each (the connections the node holds bound
/// it), so that a storm of connects or disconnects never refuses one.
const REQUEST_QUEUE: usize = 4096;

/// The wake callback: called after each output is queued (e.g. `mio::Waker::wake`).
pub type Wake = Box<dyn Fn() + Send + Sync>;

/// Names a request whose answer comes back as a [`BridgeOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// Names a command the loop must execute ([`BridgeOutput::Execute`]) and answer
/// ([`ClusterBridge::complete`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// A command for a charge point the loop holds, forwarded from some node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Job {
    /// Answer with [`ClusterBridge::complete`] and this id.
    pub id: JobId,
    /// The charge point.
    pub identity: String,
    /// The CALL's action.
    pub action: String,
    /// The CALL's payload, JSON text.
    pub payload_json: String,
    /// The time left before the command's deadline; an answer after it is discarded.
    pub timeout: Duration,
}

/// What the cluster thread hands back to the loop.
#[derive(Debug)]
#[non_exhaustive]
pub enum BridgeOutput {
    /// A claim from [`ClusterBridge::claim`] was registered (`epoch: Some`) or is held locally
    /// until Redis answers (`None`): either way the claim attempt is over, and a server that
    /// held the charge point's handshake answer for it sends it now (PROTOCOL.md 6.1).
    Registered {
        /// The identity.
        identity: String,
        /// The claim's ticket.
        ticket: ClaimTicket,
        /// Its epoch.
        epoch: Option<u64>,
    },
    /// The answer to [`ClusterBridge::release`].
    Released {
        /// The request.
        request: RequestId,
        /// As [`Cluster::release`].
        result: Result<bool, ClusterError>,
    },
    /// The answer to [`ClusterBridge::call`].
    CallDone {
        /// The request.
        request: RequestId,
        /// As [`Cluster::call`].
        result: Result<String, CallFailure>,
    },
    /// The answer to [`ClusterBridge::refresh`].
    Refreshed {
        /// The request.
        request: RequestId,
        /// As [`Cluster::refresh`].
        result: Result<Vec<crate::LostClaim>, ClusterError>,
    },
    /// The answer to [`ClusterBridge::locate`].
    Located {
        /// The request.
        request: RequestId,
        /// As [`Cluster::locate`].
        result: Result<Option<crate::Located>, ClusterError>,
    },
    /// The answer to [`ClusterBridge::list`].
    Listed {
        /// The request.
        request: RequestId,
        /// As [`Cluster::list`].
        result: Result<Vec<crate::Located>, ClusterError>,
    },
    /// The answer to [`ClusterBridge::list_known`].
    ListedKnown {
        /// The request.
        request: RequestId,
        /// As [`Cluster::list_known`].
        listing: crate::Listing,
    },
    /// The answer to [`ClusterBridge::drain`].
    Drained {
        /// The request.
        request: RequestId,
        /// As [`Cluster::drain`].
        result: Result<usize, ClusterError>,
    },
    /// Execute this command on a local charge point and answer with
    /// [`ClusterBridge::complete`].
    Execute(Job),
    /// A cluster event (a takeover: close that socket with 1008).
    Event(ClusterEvent),
}

/// Why the bridge refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The request queue is full; answer the caller with 503 or retry later.
    #[error("the cluster thread's request queue is full")]
    Full,
    /// The cluster thread has stopped.
    #[error("the cluster thread has stopped")]
    Closed,
}

#[derive(Debug)]
enum Request {
    Register {
        identity: String,
        ticket: ClaimTicket,
    },
    Release {
        request: RequestId,
        identity: String,
        epoch: Option<u64>,
        in_flight: crate::cluster::ReleaseInFlight,
    },
    Call {
        request: RequestId,
        identity: String,
        version: Option<OcppVersion>,
        action: String,
        payload_json: String,
        timeout: Duration,
    },
    Refresh {
        request: RequestId,
    },
    Locate {
        request: RequestId,
        identity: String,
    },
    List {
        request: RequestId,
        limit: usize,
    },
    ListKnown {
        request: RequestId,
        limit: usize,
    },
    Drain {
        request: RequestId,
    },
}

type Jobs = Arc<Mutex<HashMap<u64, oneshot::Sender<JsonCallOutcome>>>>;

/// The sink of every output: queue, then wake the loop.
#[derive(Clone)]
struct Outputs {
    tx: std_mpsc::Sender<BridgeOutput>,
    wake: Arc<Wake>,
}

impl Outputs {
    fn send(&self, output: BridgeOutput) {
        if self.tx.send(output).is_ok() {
            (self.wake)();
        }
    }
}

struct BridgeExecutor {
    outputs: Outputs,
    jobs: Jobs,
    next: AtomicU64,
}

/// Forgets a job's answer slot however its execution ends.
struct JobSlot {
    jobs: Jobs,
    id: u64,
}

impl Drop for JobSlot {
    fn drop(&mut self) {
        lock(&self.jobs).remove(&self.id);
    }
}

impl Executor for BridgeExecutor {
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> BoxFuture<JsonCallOutcome> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.jobs).insert(id, tx);
        let slot = JobSlot {
            jobs: Arc::clone(&self.jobs),
            id,
        };
        self.outputs.send(BridgeOutput::Execute(Job {
            id: JobId(id),
            identity: identity.to_owned(),
            action: action.to_owned(),
            payload_json: payload_json.to_owned(),
            timeout,
        }));
        Box::pin(async move {
            let _slot = slot;
            // The loop dropped the job without an answer: the charge point is gone.
            rx.await.unwrap_or(Err(CallFailure::NotConnected))
        })
    }
}

/// The cluster for a non-async event loop. Every method returns at once; answers come back
/// through [`ClusterBridge::try_recv`] after the wake callback ran.
///
/// ```no_run
/// use std::time::Duration;
/// use ocpp_cluster::{BridgeOutput, ClusterBridge, ClusterConfig, JsonCallOutcome};
///
/// # fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // In the mio server: `let waker = Arc::new(mio::Waker::new(poll.registry(), WAKE)?);`
/// // and `Box::new(move || { let _ = waker.wake(); })`.
/// let wake = Box::new(|| {});
/// let bridge = ClusterBridge::spawn(ClusterConfig::new("redis://127.0.0.1/", "csms-a"), wake)?;
/// let ticket = bridge.claim("CP-1");
/// let request = bridge.call("CP-2", "Reset", r#"{"type":"Soft"}"#, Duration::from_secs(30))?;
/// // On the waker's token:
/// while let Some(output) = bridge.try_recv() {
///     match output {
///         BridgeOutput::CallDone { request: r, result } if r == request => println!("{result:?}"),
///         BridgeOutput::Execute(job) => {
///             // Send job.action to job.identity's socket; when it answers:
///             bridge.complete(job.id, Ok("{}".into()));
///         }
///         BridgeOutput::Event(event) => println!("{event:?}: close that socket with 1008"),
///         _ => {}
///     }
/// }
/// # let _ = ticket; Ok(()) }
/// ```
pub struct ClusterBridge {
    requests: Option<mpsc::Sender<Request>>,
    /// Claims and releases: one of each per connection.
    claims: Option<mpsc::UnboundedSender<Request>>,
    outputs: std_mpsc::Receiver<BridgeOutput>,
    cluster: Cluster,
    jobs: Jobs,
    next_request: AtomicU64,
    thread: Option<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ClusterBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBridge")
            .field("node_id", &self.cluster.node_id())
            .finish_non_exhaustive()
    }
}

impl ClusterBridge {
    /// Starts the cluster node on a thread of its own (named `ocpp-cluster`) with a
    /// single-threaded tokio runtime. `wake` is called after each output is queued.
    pub fn spawn(config: ClusterConfig, wake: Wake) -> Result<ClusterBridge, ClusterError> {
        let (out_tx, outputs) = std_mpsc::channel();
        let out = Outputs {
            tx: out_tx,
            wake: Arc::new(wake),
        };
        let jobs: Jobs = Arc::new(Mutex::new(HashMap::new()));
        let executor = Arc::new(BridgeExecutor {
            outputs: out.clone(),
            jobs: Arc::clone(&jobs),
            next: AtomicU64::new(1),
        });
        let (req_tx, req_rx) = mpsc::channel(REQUEST_QUEUE);
        let (claims_tx, claims_rx) = mpsc::unbounded_channel();
        let (started_tx, started_rx) = std_mpsc::channel();
        let queues = Queues {
            requests: req_rx,
            claims: claims_rx,
        };
        let thread = thread::Builder::new()
            .name("ocpp-cluster".to_owned())
            .spawn(move || run(config, executor, out, queues, started_tx))
            .map_err(|e| ClusterError::Thread(e.to_string()))?;
        let cluster = match started_rx.recv() {
            Ok(Ok(cluster)) => cluster,
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(ClusterError::Thread("the thread ended at start".to_owned())),
        };
        Ok(ClusterBridge {
            requests: Some(req_tx),
            claims: Some(claims_tx),
            outputs,
            cluster,
            jobs,
            next_request: AtomicU64::new(1),
            thread: Some(thread),
        })
    }

    fn request_id(&self) -> RequestId {
        RequestId(self.next_request.fetch_add(1, Ordering::Relaxed))
    }

    /// Queues a claim or a release (never full: see [`REQUEST_QUEUE`]).
    fn send_claim(&self, request: Request) -> Result<(), BridgeError> {
        let Some(claims) = &self.claims else {
            return Err(BridgeError::Closed);
        };
        claims.send(request).map_err(|_| BridgeError::Closed)
    }

    fn send(&self, request: Request) -> Result<(), BridgeError> {
        let Some(requests) = &self.requests else {
            return Err(BridgeError::Closed);
        };
        requests.try_send(request).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => BridgeError::Full,
            mpsc::error::TrySendError::Closed(_) => BridgeError::Closed,
        })
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        self.cluster.node_id()
    }

    /// The configuration in force.
    pub fn config(&self) -> &ClusterConfig {
        self.cluster.config()
    }

    /// Takes `identity`: held locally at once (commands route here from now on), registered in
    /// Redis by the cluster thread ([`BridgeOutput::Registered`] follows; a server waiting for
    /// it bounds its wait, [`ClusterConfig::claim_wait`]). A claim is never refused for want
    /// of room: claims and releases have a queue of their own, bounded by the connections.
    pub fn claim(&self, identity: &str) -> ClaimTicket {
        self.claim_as(identity, None)
    }

    /// [`ClusterBridge::claim`], recording the OCPP version of the connection with the claim
    /// ([`Cluster::claim_as`]).
    pub fn claim_as(&self, identity: &str, version: Option<OcppVersion>) -> ClaimTicket {
        let ticket = self.cluster.hold(identity, version);
        // Only a cluster thread that has ended refuses it; the claim then stays pending.
        let _ = self.send_claim(Request::Register {
            identity: identity.to_owned(),
            ticket,
        });
        ticket
    }

    /// The charge point left: the local claim goes at once; the Redis release follows
    /// ([`BridgeOutput::Released`]). Never refused for want of room (a queue of its own, as
    /// for claims); on `Err` (the cluster thread has ended) the Redis claim is left to expire
    /// with its TTL (commands meanwhile get NotConnected from this node).
    pub fn release(&self, identity: &str, ticket: ClaimTicket) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        // Counted from now: a drain asked for after this waits for it.
        let in_flight = self.cluster.release_started();
        let epoch = self.cluster.forget(identity, ticket);
        self.send_claim(Request::Release {
            request,
            identity: identity.to_owned(),
            epoch,
            in_flight,
        })?;
        Ok(request)
    }

    /// Sends a command to `identity` wherever it is ([`BridgeOutput::CallDone`] follows, within
    /// `timeout`).
    pub fn call(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> Result<RequestId, BridgeError> {
        self.call_as(identity, None, action, payload_json, timeout)
    }

    /// [`ClusterBridge::call`] for a request of OCPP version `version`
    /// ([`Cluster::call_as`]: [`CallFailure::WrongVersion`] when the charge point speaks
    /// another).
    pub fn call_as(
        &self,
        identity: &str,
        version: Option<OcppVersion>,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        self.send(Request::Call {
            request,
            identity: identity.to_owned(),
            version,
            action: action.to_owned(),
            payload_json: payload_json.to_owned(),
            timeout,
        })?;
        Ok(request)
    }

    /// Runs a refresh round now ([`BridgeOutput::Refreshed`] follows).
    pub fn refresh(&self) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        self.send(Request::Refresh { request })?;
        Ok(request)
    }

    /// Reads where `identity` is connected in the cluster ([`BridgeOutput::Located`] follows);
    /// see [`Cluster::locate`].
    pub fn locate(&self, identity: &str) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        self.send(Request::Locate {
            request,
            identity: identity.to_owned(),
        })?;
        Ok(request)
    }

    /// Reads where every charge point of the cluster is connected ([`BridgeOutput::Listed`]
    /// follows); see [`Cluster::list`].
    pub fn list(&self, limit: usize) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        self.send(Request::List { request, limit })?;
        Ok(request)
    }

    /// Lists the cluster's charge points as far as they can be known now
    /// ([`BridgeOutput::ListedKnown`] follows); see [`Cluster::list_known`].
    pub fn list_known(&self, limit: usize) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        self.send(Request::ListKnown { request, limit })?;
        Ok(request)
    }

    /// Leaves the cluster ([`BridgeOutput::Drained`] follows); see [`Cluster::drain`].
    pub fn drain(&self) -> Result<RequestId, BridgeError> {
        let request = self.request_id();
        self.send(Request::Drain { request })?;
        Ok(request)
    }

    /// Answers the job `id` ([`BridgeOutput::Execute`]). An answer past the job's timeout is
    /// discarded (`false`).
    pub fn complete(&self, id: JobId, outcome: JsonCallOutcome) -> bool {
        match lock(&self.jobs).remove(&id.0) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// The next output, if any (never blocks).
    pub fn try_recv(&self) -> Option<BridgeOutput> {
        self.outputs.try_recv().ok()
    }

    /// Whether the node's inbox subscription is up (see [`Cluster::is_connected`]).
    pub fn is_connected(&self) -> bool {
        self.cluster.is_connected()
    }

    /// The local claim on `identity` (no Redis call, no wait on the cluster thread).
    pub fn holds(&self, identity: &str) -> Option<Claim> {
        self.cluster.holds(identity)
    }
}

impl Drop for ClusterBridge {
    fn drop(&mut self) {
        // Closing the request queues ends the thread's loop, then its runtime and the node's
        // tasks (nothing is released: call drain first to leave cleanly).
        self.requests = None;
        self.claims = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The cluster thread's two queues: requests (bounded) and claims and releases.
struct Queues {
    requests: mpsc::Receiver<Request>,
    claims: mpsc::UnboundedReceiver<Request>,
}

impl Queues {
    /// The next request of either queue; `None` once the bridge is gone (both closed).
    async fn next(&mut self) -> Option<Request> {
        tokio::select! {
            Some(request) = self.claims.recv() => Some(request),
            Some(request) = self.requests.recv() => Some(request),
            else => None,
        }
    }
}

fn run(
    config: ClusterConfig,
    executor: Arc<BridgeExecutor>,
    out: Outputs,
    mut queues: Queues,
    started: std_mpsc::Sender<Result<Cluster, ClusterError>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = started.send(Err(ClusterError::Thread(e.to_string())));
            return;
        }
    };
    runtime.block_on(async move {
        let (cluster, mut events) = match Cluster::start_with(config, executor) {
            Ok(started_cluster) => started_cluster,
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
        if started.send(Ok(cluster.clone())).is_err() {
            return;
        }
        let events_out = out.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                events_out.send(BridgeOutput::Event(event));
            }
        });
        while let Some(request) = queues.next().await {
            let cluster = cluster.clone();
            let out = out.clone();
            tokio::spawn(async move { serve(cluster, out, request).await });
        }
        forward.abort();
    });
}

async fn serve(cluster: Cluster, out: Outputs, request: Request) {
    let output = match request {
        Request::Register { identity, ticket } => {
            let epoch = cluster.register(&identity, ticket).await;
            BridgeOutput::Registered {
                identity,
                ticket,
                epoch,
            }
        }
        Request::Release {
            request,
            identity,
            epoch,
            in_flight,
        } => {
            let result = cluster.release_registered(&identity, epoch).await;
            drop(in_flight);
            BridgeOutput::Released { request, result }
        }
        Request::Call {
            request,
            identity,
            version,
            action,
            payload_json,
            timeout,
        } => BridgeOutput::CallDone {
            request,
            result: cluster
                .call_as(&identity, version, &action, &payload_json, timeout)
                .await,
        },
        Request::Refresh { request } => BridgeOutput::Refreshed {
            request,
            result: cluster.refresh().await,
        },
        Request::Locate { request, identity } => BridgeOutput::Located {
            request,
            result: cluster.locate(&identity).await,
        },
        Request::List { request, limit } => BridgeOutput::Listed {
            request,
            result: cluster.list(limit).await,
        },
        Request::ListKnown { request, limit } => BridgeOutput::ListedKnown {
            request,
            listing: cluster.list_known(limit).await,
        },
        Request::Drain { request } => BridgeOutput::Drained {
            request,
            result: cluster.drain().await,
        },
    };
    out.send(output);
}
