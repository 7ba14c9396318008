//! Code shared by the binaries of `ocpp-examples`.
//!
//! The reference central system both servers drive is the crate `ocpp-reference-csms`
//! ([`ocpp_reference_csms`]: charge-point state, the concepts of every OCPP version, the store,
//! Basic-auth credentials, metrics and the admin HTTP interface), independent of the I/O loop.
//!
//! - [`mio_server`]: the `mio-server` binary's event loop (one or more single-threaded mio
//!   loops sharing one port with `SO_REUSEPORT`).
//! - [`tokio_server`]: the `tokio-server` binary on `ocpp-tokio` (a `Handler` over the CSMS, the
//!   admin interface on axum).
//! - [`server_cli`] and [`server_config`]: the command line both servers share, and the
//!   configuration it gives them.
//! - [`charge_point_payload`]: what a simulated charge point sends and receives, built for and
//!   read from the negotiated OCPP version; shared by the `charge-point` and `ocpp-load`
//!   binaries.
//! - [`tls`]: rustls driven the Sans-IO way between a socket and an OCPP connection
//!   (security profiles 2 and 3), for both servers and the `charge-point` binary.

pub mod charge_point_payload;
pub mod mio_server;
pub mod server_cli;
pub mod server_config;
pub mod tls;
pub mod tokio_server;
