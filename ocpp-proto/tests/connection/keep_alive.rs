//! Keep-alive: pings and the pong timeout, a busy line never pinged, settings per connection,
//! the idle timeout.

use super::*;

#[test]
fn keep_alive_pings_and_pong_timeout() {
    let config = v16()
        .ping_interval(Some(Duration::from_secs(10)))
        .pong_timeout(Duration::from_secs(5))
        .idle_timeout(None);
    let mut pair = Pair::connected(config.clone(), v16().ping_interval(None));
    // Pings go out and pongs come back: the connection lives on.
    pair.advance(Duration::from_secs(35));
    assert!(pair.csms.is_open());
    assert!(pair.take_csms_events().is_empty());
    // The charge point goes silent: no pong, so the CSMS closes after the pong timeout.
    pair.deliver_to_csms = false;
    pair.advance(Duration::from_secs(10));
    let events = pair.take_csms_events();
    assert!(
        matches!(&events[..], [Event::Closed(closed)] if closed.reason == CloseReason::PongTimeout),
        "{events:?}"
    );
    assert!(pair.csms.is_closed());
    assert_eq!(
        pair.csms.poll_timeout(),
        None,
        "a closed connection has no timers"
    );
}

/// Counts the pings the CSMS wrote (the charge point answers them; its pongs are not counted).
fn pings_from_csms(pair: &mut Pair, seconds: u64, heartbeat_every: Option<u64>) -> usize {
    let mut pings = 0;
    for second in 1..=seconds {
        if heartbeat_every.is_some_and(|every| second % every == 0) {
            let id = pair.cp.call(pair.now, heartbeat()).unwrap();
            pair.drive();
            pair.csms
                .answer(pair.now, &id, Answer::Result(heartbeat_response()))
                .unwrap();
            pair.take_csms_events();
            pair.take_cp_events();
        }
        // Look at the CSMS's output before the pair delivers it.
        pair.deliver_to_cp = false;
        pair.advance(Duration::from_secs(1));
        pings += count_pings(&pair.csms_to_cp);
        pair.deliver_to_cp = true;
        pair.drive();
    }
    pings
}

fn count_pings(wire: &[u8]) -> usize {
    let mut decoder = ocpp_frame::Decoder::new(ocpp_frame::Role::Client, Default::default());
    let mut input = wire;
    let mut pings = 0;
    while let Ok(decoded) = decoder.decode(input) {
        input = &input[decoded.consumed..];
        match decoded.message {
            Some(Message::Ping(_)) => pings += 1,
            Some(_) => {}
            None => break,
        }
    }
    pings
}

#[test]
fn a_busy_line_is_never_pinged_a_silent_one_is() {
    let config = v16()
        .ping_interval(Some(Duration::from_secs(30)))
        .pong_timeout(Duration::from_secs(10))
        .idle_timeout(None);
    let cp_config = v16().ping_interval(None).idle_timeout(None);
    // A Heartbeat every 10 s: the line is never silent for 30 s, so no ping in 2 minutes.
    let mut busy = Pair::connected(config.clone(), cp_config.clone());
    assert_eq!(pings_from_csms(&mut busy, 120, Some(10)), 0);
    assert!(busy.csms.is_open());
    // Silence: one ping per 30 s of it.
    let mut silent = Pair::connected(config, cp_config);
    assert_eq!(pings_from_csms(&mut silent, 120, None), 4);
    assert!(silent.csms.is_open(), "the pongs came back");
}

#[test]
fn settings_change_for_one_connection() {
    let config = v16()
        .ping_interval(Some(Duration::from_secs(30)))
        .idle_timeout(None);
    let mut pair = Pair::connected(config.clone(), v16().ping_interval(None).idle_timeout(None));
    // Pings off for this charge point alone; a short idle timeout instead.
    let quiet = config
        .clone()
        .ping_interval(None)
        .idle_timeout(Some(Duration::from_secs(50)));
    pair.csms.set_config(pair.now, std::sync::Arc::new(quiet));
    assert_eq!(pings_from_csms(&mut pair, 45, None), 0);
    assert!(pair.csms.is_open());
    pair.advance(Duration::from_secs(10));
    assert!(pair
        .take_csms_events()
        .iter()
        .any(|e| matches!(e, Event::Closed(c) if c.reason == CloseReason::IdleTimeout)));
}

#[test]
fn idle_timeout_closes() {
    let config = v16()
        .ping_interval(None)
        .idle_timeout(Some(Duration::from_secs(100)));
    let mut pair = Pair::connected(config, v16().ping_interval(None).idle_timeout(None));
    pair.advance(Duration::from_secs(99));
    assert!(pair.csms.is_open());
    let id = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    pair.csms
        .answer(pair.now, &id, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.advance(Duration::from_secs(99));
    assert!(pair.csms.is_open(), "data resets the idle timer");
    pair.advance(Duration::from_secs(2));
    assert!(pair
        .take_csms_events()
        .iter()
        .any(|e| matches!(e, Event::Closed(c) if c.reason == CloseReason::IdleTimeout)));
}
