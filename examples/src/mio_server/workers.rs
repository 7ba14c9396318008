//! The worker threads that run the CSMS's [`Later`] jobs (a commit, a network round trip) so
//! that no event loop waits for them: a job is queued with the function that takes its answer
//! back to the loop holding the connection (a `LoopCommand` through that loop's mailbox).

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

use ocpp_proto::Answer;

use ocpp_reference_csms::{Csms, Later};

/// How many jobs run at once. Jobs mostly wait (for a disk flush, for another server), so
/// this is about how many slow answers may be under way at once, not about cores.
pub(super) const WORKERS: usize = 8;

/// What a worker does with a job's answer.
type Deliver = Box<dyn FnOnce(Answer) + Send>;

/// The pool: a queue shared by [`WORKERS`] threads, started on the first job.
#[derive(Debug)]
pub(super) struct Workers {
    queue: Mutex<Option<Sender<(Later, Deliver)>>>,
    csms: Arc<Csms>,
}

impl Workers {
    pub(super) fn new(csms: Arc<Csms>) -> Self {
        Workers {
            queue: Mutex::new(None),
            csms,
        }
    }

    /// Runs `later` on a worker and hands its answer to `deliver` there. Should no worker
    /// thread start, the job runs here rather than be lost.
    pub(super) fn run(&self, later: Later, deliver: impl FnOnce(Answer) + Send + 'static) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.is_none() {
            *queue = self.start();
        }
        let job = (later, Box::new(deliver) as Deliver);
        let job = match queue.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => return,
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        drop(queue);
        let (later, deliver) = job;
        deliver(later.run(&self.csms));
    }

    /// Starts the threads; `None` if not even one could start.
    fn start(&self) -> Option<Sender<(Later, Deliver)>> {
        let (sender, receiver) = mpsc::channel::<(Later, Deliver)>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut started = 0;
        for index in 0..WORKERS {
            let (receiver, csms) = (Arc::clone(&receiver), Arc::clone(&self.csms));
            let spawned = std::thread::Builder::new()
                .name(format!("csms-worker-{index}"))
                .spawn(move || work(&receiver, &csms));
            match spawned {
                Ok(_) => started += 1,
                Err(e) => tracing::error!(index, "cannot start a worker thread: {e}"),
            }
        }
        (started > 0).then_some(sender)
    }
}

/// One worker: takes jobs until the pool is dropped.
fn work(receiver: &Mutex<Receiver<(Later, Deliver)>>, csms: &Csms) {
    loop {
        let job = receiver.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((later, deliver)) = job else {
            return;
        };
        deliver(later.run(csms));
    }
}
