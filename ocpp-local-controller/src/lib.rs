//! A Local Controller (OCPP 2.0.1 and 2.1 Part 4 §3.3; also for 1.6): on a site between its
//! charging stations and the central system, it accepts each station's WebSocket as a central
//! system would, opens one WebSocket of its own to the central system under that station's
//! identity, and relays the OCPP-J text messages unchanged both ways, byte for byte (so that
//! signed messages keep their signatures).
//!
//! Hooks observe every message ([`LocalControllerBuilder::on_message`]), answer a station's
//! CALL here instead of forwarding it ([`LocalControllerBuilder::on_station_call`]), and
//! [`RelayedStations::call`] sends a CALL of the controller's own to a station (e.g.
//! SetChargingProfile for a site limit), whose answer comes back to the caller and never to
//! the central system.
//!
//! How a pair lives:
//! - **upstream first**: when a station's upgrade request arrives, the controller connects to
//!   `{upstream}/{identity}` offering the versions the station offered, in its order, with the
//!   station's Basic credentials (or [`LocalControllerBuilder::upstream_password`]'s), and
//!   answers the station only then: 101 with the version the central system chose, or the
//!   central system's refusal (401, 404, ...; 502 when it cannot be reached). So the station
//!   sees the central system's decision as if connected directly, and nothing it sends is ever
//!   left without a place to go.
//! - **closes go through**: a station's close closes its upstream connection with the same
//!   code (1001 when it had none that may be sent, e.g. the stream just ended), and the
//!   central system's close closes the station the same way.
//! - **no reconnect of its own**: when the upstream connection drops, the station is closed
//!   (1001) and reconnects with its own back-off (OCPP 2.0.1 B.B04), which re-creates the pair:
//!   the simplest behaviour that is correct, as the station then boots and resends its queue
//!   exactly as after a direct disconnection.
//! - **TLS** towards the central system with `wss://` and
//!   [`LocalControllerBuilder::upstream_tls`]; towards the stations with
//!   [`LocalControllerBuilder::station_tls`] (the stations then connect with `wss://`, as to a
//!   central system serving security profiles 2 and 3: the same `rustls::ServerConfig` as
//!   [`ServerBuilder::tls`](ocpp_tokio::ServerBuilder::tls)), or in plain `ws://` without it (a
//!   controller often sits on the site's own network).
//! - WebSocket pings, limits and the close handshake are per hop (RFC 6455 control frames are
//!   not relayed), each hop an [`ocpp_proto::Connection`] in relay mode
//!   ([`ConnectionConfig::relay_text`](ocpp_tokio::ConnectionConfig::relay_text)).

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod controller;
mod error;
mod message;
mod pair;
mod relay;
mod stations;
mod upstream;

pub use controller::{LocalController, LocalControllerBuilder};
pub use error::{LocalControllerError, OwnCallError};
pub use message::{RelayedMessage, StationCallDecision};
pub use ocpp_messages::envelope::MessageTypeId;
pub use relay::{Envelope, Leg};
pub use stations::RelayedStations;
