//! The Lua scripts of the protocol, one file each under `src/scripts/`; `PROTOCOL.md` quotes
//! them verbatim (a test keeps the two the same).

/// `claim.lua`: a node takes an identity under a new epoch; the newest claim wins and the
/// previous holder is told on its inbox.
pub const CLAIM: &str = include_str!("scripts/claim.lua");
/// `refresh.lua`: extend each claim of a batch (one claim on Redis Cluster) while it is still
/// this node's; make it again under its own epoch if the key is gone or names an older claim
/// (a write lost with Redis's data or in a failover), telling that claim's node; report a
/// loss to a newer claim otherwise. One answer per claim.
pub const REFRESH: &str = include_str!("scripts/refresh.lua");
/// `release.lua`: compare-and-delete (a tombstone that expires) when the charge point leaves.
pub const RELEASE: &str = include_str!("scripts/release.lua");
/// `route.lua`: find the holder of an identity and publish a command to its inbox (on Redis
/// Cluster: find the holder; [`ABSENT`] or [`DELIVER`] goes on).
pub const ROUTE: &str = include_str!("scripts/route.lua");
/// `absent.lua` (Redis Cluster): no claim of an identity; whether it is connected nowhere.
pub const ABSENT: &str = include_str!("scripts/absent.lua");
/// `deliver.lua` (Redis Cluster): publish a command to the holder's inbox if it is live.
pub const DELIVER: &str = include_str!("scripts/deliver.lua");
/// `failover.lua`: a node that follows a Sentinel failover marks the new master as one that
/// may have lost data (`since`) and lifts the epoch counter above the old master's; on Redis
/// Cluster, a node that sees a master with other data serve marks `since` alone.
pub const FAILOVER: &str = include_str!("scripts/failover.lua");

/// `announce.lua`: a node says it is alive for one node TTL, and whether its claims are all
/// registered since Redis got its data (`since`), which it returns.
pub const ANNOUNCE: &str = include_str!("scripts/announce.lua");

/// Every script with its file name, in the order PROTOCOL.md lists them.
pub const ALL: [(&str, &str); 8] = [
    ("claim.lua", CLAIM),
    ("refresh.lua", REFRESH),
    ("release.lua", RELEASE),
    ("route.lua", ROUTE),
    ("absent.lua", ABSENT),
    ("deliver.lua", DELIVER),
    ("failover.lua", FAILOVER),
    ("announce.lua", ANNOUNCE),
];

/// The scripts prepared once per cluster (their SHA-1 computed; `EVALSHA`, then `EVAL` on
/// `NOSCRIPT`, e.g. after Redis restarted).
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) claim: redis::Script,
    pub(crate) refresh: redis::Script,
    pub(crate) release: redis::Script,
    pub(crate) route: redis::Script,
    pub(crate) failover: redis::Script,
    pub(crate) absent: redis::Script,
    pub(crate) deliver: redis::Script,
    pub(crate) announce: redis::Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Self {
            claim: redis::Script::new(CLAIM),
            refresh: redis::Script::new(REFRESH),
            release: redis::Script::new(RELEASE),
            route: redis::Script::new(ROUTE),
            failover: redis::Script::new(FAILOVER),
            absent: redis::Script::new(ABSENT),
            deliver: redis::Script::new(DELIVER),
            announce: redis::Script::new(ANNOUNCE),
        }
    }
}
