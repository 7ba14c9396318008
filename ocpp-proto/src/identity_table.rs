//! Which connection holds which charge point: the policy a CSMS needs for duplicates.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

use std::time::Instant;

use ocpp_frame::CloseCode;

use crate::{ChargePointIdentity, Connection};

/// Maps each charge-point identity to the handle of the connection that currently holds it.
///
/// A charge point that reconnects before the server noticed its old connection died arrives as a
/// second connection with the same identity. The new one wins: [`IdentityTable::register`] returns
/// the old handle so the application closes it, and the old connection's later
/// [`IdentityTable::remove`] does nothing, because it no longer holds the identity. `H` is the
/// application's connection handle (a slab index with a generation, a token, an `Arc`...).
///
/// ```
/// use ocpp_proto::{ChargePointIdentity, IdentityTable};
/// let cp = ChargePointIdentity::new("CP1".into(), true).unwrap();
/// let mut table = IdentityTable::new();
/// assert_eq!(table.register(cp.clone(), 1u32), None);
/// assert_eq!(table.register(cp.clone(), 2u32), Some(1)); // close connection 1
/// assert!(!table.remove(&cp, &1)); // connection 1 closing does not remove connection 2
/// assert_eq!(table.get(&cp), Some(&2));
/// assert_eq!(table.get("CP1"), Some(&2)); // looked up by `&str`, without allocating
/// assert!(table.remove(&cp, &2));
/// assert!(table.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct IdentityTable<H> {
    holders: HashMap<ChargePointIdentity, H>,
}

impl<H> Default for IdentityTable<H> {
    fn default() -> Self {
        IdentityTable {
            holders: HashMap::new(),
        }
    }
}

impl<H: PartialEq> IdentityTable<H> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `handle` now holds `identity`; returns the handle it replaces, which the
    /// application should close (e.g. with close code 1008 or 1001).
    pub fn register(&mut self, identity: ChargePointIdentity, handle: H) -> Option<H> {
        self.holders.insert(identity, handle)
    }

    /// Removes `identity` if, and only if, `handle` still holds it. Returns whether it did.
    pub fn remove<Q>(&mut self, identity: &Q, handle: &H) -> bool
    where
        ChargePointIdentity: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.holders.get(identity) == Some(handle) {
            self.holders.remove(identity);
            true
        } else {
            false
        }
    }

    /// The handle holding `identity` (a [`ChargePointIdentity`] or a `&str`: no allocation).
    pub fn get<Q>(&self, identity: &Q) -> Option<&H>
    where
        ChargePointIdentity: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.holders.get(identity)
    }

    /// The identity as the table holds it and its handle (looked up by a `&str` too): a
    /// handle that keeps no identity of its own can be given one without allocating.
    ///
    /// ```
    /// use ocpp_proto::{ChargePointIdentity, IdentityTable};
    /// let mut table = IdentityTable::new();
    /// table.register(ChargePointIdentity::new("CP1".into(), false)?, 7);
    /// let (identity, handle) = table.get_key_value("CP1").unwrap();
    /// assert_eq!((identity.as_str(), *handle), ("CP1", 7));
    /// # Ok::<(), ocpp_proto::IdentityError>(())
    /// ```
    pub fn get_key_value<Q>(&self, identity: &Q) -> Option<(&ChargePointIdentity, &H)>
    where
        ChargePointIdentity: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.holders.get_key_value(identity)
    }

    /// How many identities are held.
    pub fn len(&self) -> usize {
        self.holders.len()
    }

    /// Whether no identity is held.
    pub fn is_empty(&self) -> bool {
        self.holders.is_empty()
    }

    /// Every identity and its handle.
    pub fn iter(&self) -> impl Iterator<Item = (&ChargePointIdentity, &H)> {
        self.holders.iter()
    }
}

/// Why a server closes a connection that no longer holds its charge point's identity: the
/// close every server sends for it, decided here once (ocpp-go #314/#358 and SteVe #357 keep
/// the older connection, or both).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Instant;
/// use ocpp_proto::{CloseCode, Connection, ConnectionConfig, Superseded};
///
/// assert_eq!(Superseded::CLOSE_CODE, CloseCode::POLICY_VIOLATION);
/// assert_eq!(Superseded::NewerConnection.reason(), "replaced by a newer connection");
/// let mut old = Connection::accept_incoming(Instant::now(), Arc::new(ConnectionConfig::default()));
/// old.close_superseded(Instant::now(), Superseded::NewerConnection);
/// assert!(old.is_closed());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Superseded {
    /// A newer connection of the same identity came to this server
    /// ([`IdentityTable::register`] returned this connection's handle).
    NewerConnection,
    /// The charge point connected to another node of the cluster, which took its claim.
    OtherNode,
}

impl Superseded {
    /// The close code (RFC 6455 §7.4.1, 1008 policy violation): the charge point may not hold
    /// two connections.
    pub const CLOSE_CODE: CloseCode = CloseCode::POLICY_VIOLATION;

    /// The close reason sent with [`Superseded::CLOSE_CODE`] (the same from every server).
    pub const fn reason(self) -> &'static str {
        match self {
            Superseded::NewerConnection => "replaced by a newer connection",
            Superseded::OtherNode => "connected to another node",
        }
    }
}

impl<C> Connection<C> {
    /// Closes this connection because it no longer holds its identity: with
    /// [`Superseded::CLOSE_CODE`] and the reason for `why`.
    pub fn close_superseded(&mut self, now: Instant, why: Superseded) {
        self.close(now, Superseded::CLOSE_CODE, why.reason());
    }
}
