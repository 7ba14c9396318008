//! Code shared by the binaries of `ocpp-examples`.
//!
//! - [`csms`]: the application a central system (CSMS) author starts from, independent of the
//!   I/O loop: charge-point state, the per-version handlers (BootNotification, Heartbeat,
//!   StatusNotification, MeterValues, Authorize, transactions), Basic-auth credentials,
//!   metrics and the admin HTTP interface. The mio server and the tokio server both drive it.
//! - [`mio_server`]: the `mio-server` binary's event loop (one or more single-threaded mio
//!   loops sharing one port with `SO_REUSEPORT`).

pub mod csms;
pub mod mio_server;
pub mod server_cli;
pub mod tokio_server;
