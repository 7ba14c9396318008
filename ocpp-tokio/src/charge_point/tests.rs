use super::*;

/// A waker that does nothing (`Waker::noop` needs Rust 1.85; the workspace supports 1.81).
struct Noop;

impl std::task::Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn noop() -> Waker {
    Waker::from(Arc::new(Noop))
}

fn close() -> LinkCommand {
    LinkCommand::Close {
        code: CloseCode::NORMAL,
        reason: String::new(),
    }
}

fn call() -> LinkCommand {
    let (reply, _) = oneshot::channel();
    let request = ocpp_messages::v1_6::HeartbeatRequest::default().into();
    LinkCommand::Call {
        request,
        reply: CallReply::Waiting(reply),
        deadline: None,
    }
}

/// A `call_raw_then` function runs once: with the outcome, or with `Disconnected` when
/// its command is dropped unanswered (a task dropped with its runtime); a panic in it
/// then is contained.
#[test]
fn an_outcome_function_runs_exactly_once() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let then = |seen: &Arc<Mutex<Vec<_>>>| {
        let seen = Arc::clone(seen);
        CallReply::Then(OnOutcome(Some(Box::new(move |outcome| {
            seen.lock().unwrap().push(outcome)
        }))))
    };
    then(&seen).send(Err(CallFailure::Timeout));
    drop(then(&seen));
    assert_eq!(
        *seen.lock().unwrap(),
        [Err(CallFailure::Timeout), Err(CallFailure::Disconnected)]
    );
    drop(CallReply::Then(OnOutcome(Some(Box::new(|_| {
        panic!("in the function")
    })))));
}

#[test]
fn the_mailbox_is_bounded_and_refuses_once_closed() {
    let link = TaskLink::new(2);
    assert!(link.push(call()).is_ok());
    assert!(link.push(call()).is_ok());
    assert!(matches!(link.push(call()), Err((_, true))));
    // Closes and settings always get in.
    assert!(link.push(close()).is_ok());
    let waker = noop();
    assert!(link.pop(&waker).is_some());
    assert_eq!(link.close().len(), 2);
    assert!(matches!(link.push(close()), Err((_, false))));
    assert!(matches!(link.push(call()), Err((_, false))));
    assert!(link.is_closed());
}

#[test]
fn only_calls_and_sends_count_against_the_bound() {
    let link = TaskLink::new(1);
    assert!(link.push(close()).is_ok());
    assert!(link.push(call()).is_ok());
    assert!(matches!(link.push(call()), Err((_, true))));
    let waker = noop();
    assert!(matches!(link.pop(&waker), Some(LinkCommand::Close { .. })));
    assert!(matches!(link.pop(&waker), Some(LinkCommand::Call { .. })));
    assert!(link.push(call()).is_ok());
    // A CALL pushed as its parts counts the same, and a refused one gives its reply back.
    let heartbeat = || ocpp_messages::v1_6::HeartbeatRequest::default().into();
    let then = || CallReply::Then(OnOutcome(Some(Box::new(|_| {}))));
    assert!(matches!(
        link.push_call(heartbeat(), then(), None),
        Err((CallReply::Then(_), true))
    ));
    assert!(matches!(link.pop(&waker), Some(LinkCommand::Call { .. })));
    assert!(link.push_call(heartbeat(), then(), None).is_ok());
    link.close();
    assert!(matches!(
        link.push_call(heartbeat(), then(), None),
        Err((CallReply::Then(_), false))
    ));
}

#[test]
fn an_empty_mailbox_holds_no_queue() {
    let link = TaskLink::new(4);
    assert!(link.push(close()).is_ok());
    let waker = noop();
    assert!(link.pop(&waker).is_some());
    assert!(link.pop(&waker).is_none());
    assert_eq!(link.lock().commands.capacity(), 0);
}

#[test]
fn a_push_after_an_empty_pop_is_found_and_wakes() {
    struct Count(std::sync::atomic::AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let count = Arc::new(Count(Default::default()));
    let waker = Waker::from(count.clone());
    let link = TaskLink::new(4);
    assert!(link.pop(&waker).is_none());
    assert!(link.pop(&waker).is_none()); // the lock-free answer
    assert!(link.push(call()).is_ok());
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    assert!(matches!(link.pop(&waker), Some(LinkCommand::Call { .. })));
    assert!(link.pop(&waker).is_none());
    assert!(link.push(close()).is_ok());
    assert_eq!(count.0.load(Ordering::SeqCst), 2);
    assert_eq!(link.close().len(), 1);
    assert!(link.pop(&waker).is_none());
}

#[test]
fn settings_are_the_connections_configuration_changed_in_order() {
    let link = TaskLink::new(4);
    let config = Arc::new(ConnectionConfig::default().ping_interval(None));
    link.init_config(config.clone());
    assert_eq!(link.settings(), ConnectionSettings::from_config(&config));
    let changed = link
        .settings()
        .ping_interval(Some(Duration::from_nanos(1500)))
        .pong_timeout(Duration::ZERO)
        .idle_timeout(Some(Duration::MAX))
        .call_timeout(Duration::from_micros(2500));
    assert!(link.set_settings(changed));
    assert_eq!(link.settings(), changed);
    // The server's configuration is untouched: the connection has one of its own now.
    assert_eq!(config.get_ping_interval(), None);
    // The task gets the same change, to make to the connection's configuration.
    let waker = noop();
    assert!(matches!(link.pop(&waker), Some(LinkCommand::Settings(s)) if s == changed));
    link.close();
    assert!(!link.set_settings(changed.ping_interval(None)));
    assert_eq!(link.settings(), changed);
}
