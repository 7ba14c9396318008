//! A CSMS connection and a charge-point connection wired together in memory, in simulated time
//! (the shape of quinn-proto's `Pair` and str0m's tests).
#![allow(dead_code, unreachable_pub)]

pub mod raw;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_messages::v1_6;
use ocpp_proto::{
    ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, Event, MessageId, Request,
    Response,
};

/// A message id from text.
pub fn mid(id: &str) -> MessageId<'static> {
    MessageId::new(id.to_owned()).unwrap()
}

/// A CSMS and a charge point in simulated time; the charge point's CALLs carry callers of
/// type `C` (`()` by default: `Connection::call`).
pub struct Pair<C = ()> {
    pub now: Instant,
    pub csms: Connection,
    pub cp: Connection<C>,
    pub csms_events: Vec<Event>,
    pub cp_events: Vec<Event<C>>,
    /// Bytes moved per write, to exercise every split (0: all at once).
    pub chunk: usize,
    /// Bytes written by the CSMS and not yet delivered (when delivery is paused).
    pub csms_to_cp: Vec<u8>,
    pub cp_to_csms: Vec<u8>,
    pub deliver_to_cp: bool,
    pub deliver_to_csms: bool,
}

impl Pair {
    pub fn new(csms_config: ConnectionConfig, cp_config: ConnectionConfig) -> Pair {
        Pair::with_callers(csms_config, cp_config)
    }

    /// A pair on OCPP 1.6, connected (the CSMS accepted the upgrade).
    pub fn connected_v16() -> Pair {
        Pair::connected_v16_with_callers()
    }

    pub fn connected(csms: ConnectionConfig, cp: ConnectionConfig) -> Pair {
        Pair::connected_with_callers(csms, cp)
    }
}

impl<C: std::fmt::Debug> Pair<C> {
    pub fn with_callers(csms_config: ConnectionConfig, cp_config: ConnectionConfig) -> Pair<C> {
        let now = Instant::now();
        let csms = Connection::accept_incoming(now, Arc::new(csms_config));
        let identity = ChargePointIdentity::new("CP-001".into(), true).unwrap();
        let target = ConnectTarget::new("csms.example", "/ocpp", identity);
        let cp = Connection::connect_with_callers(now, Arc::new(cp_config), &target, [7; 16], 42)
            .unwrap();
        Pair {
            now,
            csms,
            cp,
            csms_events: Vec::new(),
            cp_events: Vec::new(),
            chunk: 0,
            csms_to_cp: Vec::new(),
            cp_to_csms: Vec::new(),
            deliver_to_cp: true,
            deliver_to_csms: true,
        }
    }

    pub fn connected_v16_with_callers() -> Pair<C> {
        let versions = vec![ocpp_messages::version::OcppVersion::V1_6];
        Self::connected_with_callers(
            ConnectionConfig::default().versions(versions.clone()),
            ConnectionConfig::default().versions(versions),
        )
    }

    pub fn connected_with_callers(csms: ConnectionConfig, cp: ConnectionConfig) -> Pair<C> {
        let mut pair = Pair::with_callers(csms, cp);
        pair.drive();
        let upgrade = pair.take_csms_events();
        assert!(
            matches!(upgrade.as_slice(), [Event::UpgradeRequested(_)]),
            "{upgrade:?}"
        );
        pair.csms.accept(pair.now).unwrap();
        pair.drive();
        assert!(matches!(
            pair.take_csms_events().as_slice(),
            [Event::Connected { .. }]
        ));
        assert!(matches!(
            pair.take_cp_events().as_slice(),
            [Event::Connected { .. }]
        ));
        pair
    }

    /// Moves bytes both ways and collects events until nothing moves.
    pub fn drive(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            moved |= transfer(
                &mut self.cp,
                &mut self.cp_to_csms,
                self.deliver_to_csms.then_some(&mut self.csms),
                self.chunk,
                self.now,
            );
            moved |= transfer(
                &mut self.csms,
                &mut self.csms_to_cp,
                self.deliver_to_cp.then_some(&mut self.cp),
                self.chunk,
                self.now,
            );
            while let Some(e) = self.csms.poll_event() {
                self.csms_events.push(e);
                moved = true;
            }
            while let Some(e) = self.cp.poll_event() {
                self.cp_events.push(e);
                moved = true;
            }
            if !moved {
                return;
            }
        }
        panic!("the pair did not settle");
    }

    /// Advances simulated time by `by`, firing every deadline on the way, in order.
    pub fn advance(&mut self, by: Duration) {
        let end = self.now + by;
        loop {
            let next = [self.csms.poll_timeout(), self.cp.poll_timeout()]
                .into_iter()
                .flatten()
                .filter(|t| *t <= end)
                .min();
            let Some(at) = next else { break };
            self.now = self.now.max(at);
            self.csms.handle_timeout(self.now);
            self.cp.handle_timeout(self.now);
            self.drive();
        }
        self.now = end;
        self.drive();
    }

    pub fn take_csms_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.csms_events)
    }

    pub fn take_cp_events(&mut self) -> Vec<Event<C>> {
        std::mem::take(&mut self.cp_events)
    }
}

/// Drains `from`'s output into `buffer`, then delivers `buffer` to `to` if it is given.
fn transfer<A, B>(
    from: &mut Connection<A>,
    buffer: &mut Vec<u8>,
    to: Option<&mut Connection<B>>,
    chunk: usize,
    now: Instant,
) -> bool {
    let pending = from.pending_transmit().len();
    buffer.extend_from_slice(from.pending_transmit());
    from.advance_transmit(pending);
    let Some(to) = to else {
        return pending > 0;
    };
    if buffer.is_empty() {
        return pending > 0;
    }
    let data = std::mem::take(buffer);
    if chunk == 0 {
        to.handle_data(now, &data);
    } else {
        for piece in data.chunks(chunk) {
            to.handle_data(now, piece);
        }
    }
    true
}

pub fn boot_request() -> Request {
    Request::from(v1_6::Request::from(v1_6::BootNotificationRequest {
        charge_point_vendor: "ACME".into(),
        charge_point_model: "Fast-50".into(),
        charge_point_serial_number: None,
        charge_box_serial_number: None,
        firmware_version: Some("1.2.3".into()),
        iccid: None,
        imsi: None,
        meter_type: None,
        meter_serial_number: None,
    }))
}

pub fn boot_accepted() -> Response {
    Response::from(v1_6::Response::from(v1_6::BootNotificationResponse {
        status: v1_6::RegistrationStatus::Accepted,
        current_time: ocpp_messages::DateTime::parse("2026-11-29T12:00:00Z").unwrap(),
        interval: 300,
    }))
}

pub fn heartbeat() -> Request {
    Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}))
}

pub fn heartbeat_response() -> Response {
    Response::from(v1_6::Response::from(v1_6::HeartbeatResponse {
        current_time: ocpp_messages::DateTime::parse("2026-11-29T12:00:00Z").unwrap(),
    }))
}
