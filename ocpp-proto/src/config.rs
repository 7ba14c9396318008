//! Per-connection settings: timers, limits and the OCPP versions on offer.

use std::time::Duration;

use ocpp_frame::deflate::DeflateConfig;
use ocpp_frame::handshake::HandshakeConfig;
use ocpp_frame::DecoderConfig;
use ocpp_messages::decode::DecodeOptions;
use ocpp_messages::version::OcppVersion;

/// How the CSMS picks the OCPP version among the subprotocols a charge point offers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionPolicy {
    /// The first subprotocol in the client's list that the server supports (OCPP 2.1 Part 4
    /// §3.1.2: the client lists them in order of preference).
    ClientPreference,
    /// The first version in this list that the client offers, whatever the client's order.
    ServerPreference(Vec<OcppVersion>),
}

/// What the CSMS does when the client offers no subprotocol it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoCommonVersion {
    /// Complete the handshake without `Sec-WebSocket-Protocol`, then close with 1002, as the
    /// OCPP-J documents ask (OCPP 2.0.1 Part 4 §3.1.2).
    AcceptThenClose,
    /// Answer the upgrade with `400 Bad Request`.
    Reject400,
}

/// permessage-deflate (RFC 7692; OCPP-J 1.6 and 2.x ask a central system to support it).
///
/// The CSMS side answers a charge point's offer in the 101 response; the charge-point side
/// offers it in its upgrade request and checks the answer (an answer it did not allow fails the
/// connection). Compressed messages are inflated with the decoder's size limit applied to the
/// inflated size (a decompression bomb is closed with 1009).
///
/// Memory: with the [`DeflateConfig`] default (no context takeover either way) an idle
/// connection holds no compression state; a message in flight costs about 371 KiB to compress
/// and 47 KiB to inflate, freed after it. With context takeover (better ratios on streams of
/// similar messages) the state stays: up to 380,176 + 47,704 bytes per connection at 15 window
/// bits.
///
/// ```
/// use ocpp_frame::deflate::DeflateConfig;
/// use ocpp_proto::{ConnectionConfig, DeflatePolicy};
/// // A charge point that offers compression with context takeover on its own messages.
/// let config = ConnectionConfig::default().deflate(DeflatePolicy::Offer(
///     DeflateConfig::default().client_no_context_takeover(false),
/// ));
/// assert!(matches!(config.get_deflate(), DeflatePolicy::Offer(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeflatePolicy {
    /// Never: a CSMS answers without the extension, a charge point offers nothing.
    Off,
    /// A CSMS accepts an offer with this config; a charge point offers nothing. The default,
    /// with [`DeflateConfig::default`]: no context takeover asked of either side, so an idle
    /// connection holds no compressor state.
    Accept(DeflateConfig),
    /// A CSMS accepts an offer, and a charge point makes one ([`DeflateConfig::offer`]).
    Offer(DeflateConfig),
}

impl DeflatePolicy {
    /// The config, unless [`DeflatePolicy::Off`].
    pub fn config(&self) -> Option<&DeflateConfig> {
        match self {
            DeflatePolicy::Off => None,
            DeflatePolicy::Accept(config) | DeflatePolicy::Offer(config) => Some(config),
        }
    }
}

impl Default for DeflatePolicy {
    fn default() -> Self {
        DeflatePolicy::Accept(DeflateConfig::default())
    }
}

/// Settings of one connection. Share one among many connections with `Arc`.
///
/// ```
/// use std::time::Duration;
/// use ocpp_proto::ConnectionConfig;
/// let config = ConnectionConfig::default()
///     .ping_interval(None) // some chargers misbehave with server pings
///     .call_timeout(Duration::from_secs(60));
/// assert_eq!(config.get_call_timeout(), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectionConfig {
    pub(crate) versions: Vec<OcppVersion>,
    pub(crate) version_policy: VersionPolicy,
    pub(crate) no_common_version: NoCommonVersion,
    pub(crate) handshake_timeout: Duration,
    pub(crate) ping_interval: Option<Duration>,
    pub(crate) pong_timeout: Duration,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) call_timeout: Duration,
    pub(crate) close_timeout: Duration,
    pub(crate) linger: Duration,
    pub(crate) max_outbound_bytes: usize,
    pub(crate) max_queued_calls: usize,
    pub(crate) max_held_calls: usize,
    pub(crate) decoder: DecoderConfig,
    pub(crate) handshake: HandshakeConfig,
    pub(crate) decode_options: DecodeOptions,
    pub(crate) deflate: DeflatePolicy,
    pub(crate) relay_text: bool,
}

/// The versions this build knows (features `v2_1`, `v2_0_1`, `v1_6`), newest first.
fn compiled_versions() -> Vec<OcppVersion> {
    [
        (cfg!(feature = "v2_1"), OcppVersion::V2_1),
        (cfg!(feature = "v2_0_1"), OcppVersion::V2_0_1),
        (cfg!(feature = "v1_6"), OcppVersion::V1_6),
    ]
    .into_iter()
    .filter_map(|(compiled, version)| compiled.then_some(version))
    .collect()
}

impl Default for ConnectionConfig {
    /// Every version compiled in (features `v1_6`, `v2_0_1`, `v2_1`; all three by default) in
    /// the client's preference, 10 s to finish the handshake, a ping every 60 s with 30 s for
    /// its pong, 5 minutes idle, 30 s per CALL, 5 s for the close handshake,
    /// 256 KiB of unsent output, 16 queued CALLs, 4 held incoming CALLs, 64 KiB messages,
    /// permessage-deflate accepted when offered (without context takeover).
    fn default() -> Self {
        ConnectionConfig {
            versions: compiled_versions(),
            version_policy: VersionPolicy::ClientPreference,
            no_common_version: NoCommonVersion::AcceptThenClose,
            handshake_timeout: Duration::from_secs(10),
            ping_interval: Some(Duration::from_secs(60)),
            pong_timeout: Duration::from_secs(30),
            idle_timeout: Some(Duration::from_secs(300)),
            call_timeout: Duration::from_secs(30),
            close_timeout: Duration::from_secs(5),
            linger: Duration::from_secs(2),
            max_outbound_bytes: 256 * 1024,
            max_queued_calls: 16,
            max_held_calls: 4,
            decoder: DecoderConfig::default()
                .max_frame_size(64 * 1024)
                .max_message_size(64 * 1024)
                .max_fragments(64),
            handshake: HandshakeConfig::default(),
            decode_options: DecodeOptions::strict(),
            deflate: DeflatePolicy::default(),
            relay_text: false,
        }
    }
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident, $get:ident, $ty:ty) => {
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = value;
            self
        }

        #[doc = concat!("See [`ConnectionConfig::", stringify!($name), "`].")]
        pub fn $get(&self) -> $ty {
            self.$name.clone()
        }
    };
}

impl ConnectionConfig {
    setter!(
        /// The OCPP versions this end supports.
        versions, get_versions, Vec<OcppVersion>
    );
    setter!(
        /// How the CSMS chooses among the versions both ends support.
        version_policy, get_version_policy, VersionPolicy
    );
    setter!(
        /// What the CSMS does when no offered subprotocol is supported.
        no_common_version, get_no_common_version, NoCommonVersion
    );
    setter!(
        /// Time from the first byte to a completed upgrade, the application's decision included
        /// (slowloris defence).
        handshake_timeout, get_handshake_timeout, Duration
    );
    setter!(
        /// Keep-alive (OCPP `WebSocketPingInterval`): a ping once the peer has been silent for
        /// this long, so a busy line is never pinged and costs no timer work per message; a
        /// silent one is pinged every interval and dropped when a pong does not come within
        /// [`ConnectionConfig::pong_timeout`] (dead-peer detection within interval + pong
        /// timeout of the last byte received). `None` disables pings.
        ping_interval, get_ping_interval, Option<Duration>
    );
    setter!(
        /// How long a pong may take before the connection is considered dead.
        pong_timeout, get_pong_timeout, Duration
    );
    setter!(
        /// Close the connection after this long without receiving anything (pongs count);
        /// `None` never.
        idle_timeout, get_idle_timeout, Option<Duration>
    );
    setter!(
        /// How long our CALL may wait for its answer before a timeout is reported.
        call_timeout, get_call_timeout, Duration
    );
    setter!(
        /// How long we wait for the peer's close frame or end of stream after sending ours.
        close_timeout, get_close_timeout, Duration
    );
    setter!(
        /// The close linger, one policy for every driver: once the connection is over
        /// ([`Event::Closed`](crate::Event::Closed)), how long the driver may still write what
        /// [`Connection::pending_transmit`](crate::Connection::pending_transmit) holds (the
        /// close frame, a refusal's HTTP response) before it drops the socket. A peer that
        /// does not read for this long is gone. Default 2 s.
        ///
        /// ```
        /// use std::time::Duration;
        /// use ocpp_proto::ConnectionConfig;
        ///
        /// let config = ConnectionConfig::default().linger(Duration::from_millis(500));
        /// assert_eq!(config.get_linger(), Duration::from_millis(500));
        /// ```
        linger, get_linger, Duration
    );
    setter!(
        /// The most unsent output bytes: past it, CALLs and responses are refused and handed
        /// back; pongs and close frames still go out, and a peer that lets the buffer grow past
        /// twice this limit is dropped.
        max_outbound_bytes, get_max_outbound_bytes, usize
    );
    setter!(
        /// The most CALLs waiting behind the outstanding one (OCPP-J: one at a time).
        max_queued_calls, get_max_queued_calls, usize
    );
    setter!(
        /// The most peer CALLs held while an earlier one is unanswered.
        max_held_calls, get_max_held_calls, usize
    );
    setter!(
        /// The frame decoder's limits (frame and message size, fragments).
        decoder, get_decoder, DecoderConfig
    );
    setter!(
        /// The upgrade request parser's limits.
        handshake, get_handshake, HandshakeConfig
    );
    setter!(
        /// Strict or lenient schema validation, per action: lenient keeps unknown enum values
        /// and extra fields, for chargers known to drift from the schema.
        decode_options, get_decode_options, DecodeOptions
    );
    setter!(
        /// permessage-deflate: off, accepted by a CSMS (the default), or also offered by a
        /// charge point. See [`DeflatePolicy`].
        deflate, get_deflate, DeflatePolicy
    );
    setter!(
        /// Relay mode (a Local Controller, a proxy): every text message of the open WebSocket is
        /// handed over unparsed and byte for byte as [`Event::Text`](crate::Event::Text), and
        /// [`Connection::send_text`](crate::Connection::send_text) writes text as given, so
        /// that what is relayed (signed messages included) is never re-serialised. The core
        /// then neither parses, answers nor correlates OCPP-J messages; the WebSocket rules
        /// (handshake, keep-alive, close, limits, back-pressure) stay. Off by default.
        relay_text, get_relay_text, bool
    );
}
