//! The slots of a Redis Cluster: which slot a key hashes to, and which master serves each slot
//! at the last look (`CLUSTER SLOTS`). A refresh round groups its claims by master with them
//! (PROTOCOL.md 6.3); the `redis` crate's cluster connection keeps its own map for routing.

use redis::{ErrorKind, RedisError, RedisResult, Value};

/// How many slots a Redis Cluster has (Redis Cluster specification, "Key distribution model").
const SLOTS: u16 = 16384;

/// CRC16-CCITT (XModem: polynomial 0x1021, initial value 0, no reflection), the checksum the
/// Redis Cluster specification hashes keys with ("Key distribution model"; its test vector:
/// `"123456789"` gives `0x31C3`).
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of `key`: the CRC16 of its hash tag (what lies between its first `{` and the first
/// `}` after it, when that is not empty), or of the whole key, modulo 16384 (the
/// specification's "Hash tags").
pub(crate) fn key_slot(key: &[u8]) -> u16 {
    let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16(tag.unwrap_or(key)) % SLOTS
}

/// A master of a Redis Cluster, by the address `CLUSTER SLOTS` names it with.
pub(crate) type Master = (String, u16);

/// Which master served each slot when `CLUSTER SLOTS` was asked.
#[derive(Debug, Default)]
pub(crate) struct SlotMap {
    /// The ranges of slots (first, last, inclusive) and the index of their master in
    /// `masters`, sorted by their first slot.
    ranges: Vec<(u16, u16, usize)>,
    /// Each master once, in the order `CLUSTER SLOTS` first names it.
    masters: Vec<Master>,
}

impl SlotMap {
    /// The map of a `CLUSTER SLOTS` answer (each entry: first slot, last slot, then the
    /// master's host and port, then its replicas). Entries it cannot read are left out: a slot
    /// without a master is grouped with nothing, and its claims refreshed one by one.
    pub(crate) fn from_cluster_slots(answer: &Value) -> RedisResult<SlotMap> {
        let mut map = SlotMap::default();
        if let Value::Array(entries) = answer {
            for entry in entries {
                let Value::Array(fields) = entry else {
                    continue;
                };
                let (Some(Value::Int(first)), Some(Value::Int(last))) =
                    (fields.first(), fields.get(1))
                else {
                    continue;
                };
                let (Ok(first), Ok(last)) = (u16::try_from(*first), u16::try_from(*last)) else {
                    continue;
                };
                let Some(Value::Array(master)) = fields.get(2) else {
                    continue;
                };
                let host = match master.first() {
                    Some(Value::BulkString(host)) => String::from_utf8_lossy(host).into_owned(),
                    Some(Value::SimpleString(host)) => host.clone(),
                    _ => continue,
                };
                let Some(Value::Int(port)) = master.get(1) else {
                    continue;
                };
                let Ok(port) = u16::try_from(*port) else {
                    continue;
                };
                let master = (host, port);
                let index = match map.masters.iter().position(|m| *m == master) {
                    Some(index) => index,
                    None => {
                        map.masters.push(master);
                        map.masters.len() - 1
                    }
                };
                map.ranges.push((first, last, index));
            }
        }
        if map.masters.is_empty() {
            return Err(RedisError::from((
                ErrorKind::Client,
                "CLUSTER SLOTS names no master",
            )));
        }
        map.ranges.sort_unstable();
        Ok(map)
    }

    /// Every master, each once.
    pub(crate) fn masters(&self) -> &[Master] {
        &self.masters
    }

    /// The index (in [`SlotMap::masters`]) of the master that served `slot`, if any did.
    pub(crate) fn master_of(&self, slot: u16) -> Option<usize> {
        let after = self.ranges.partition_point(|&(first, _, _)| first <= slot);
        let &(_, last, master) = self.ranges.get(after.checked_sub(1)?)?;
        (slot <= last).then_some(master)
    }

    /// The index of the master that served `key`'s slot, if any did.
    pub(crate) fn master_of_key(&self, key: &[u8]) -> Option<usize> {
        self.master_of(key_slot(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_is_the_specification_s() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    /// Slots as the specification gives them (`foo` is 12182; a hash tag alone counts; an
    /// empty tag, or one never closed, hashes the whole key). `tests/redis_cluster.rs` checks
    /// them against `CLUSTER KEYSLOT` too.
    #[test]
    fn keys_hash_to_the_slots_redis_gives_them() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"{ocpp}:since"), key_slot(b"ocpp"));
        assert_eq!(key_slot(b"{ocpp}:inbox:a"), key_slot(b"{ocpp}:nodes"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar"), crc16(b"foo{bar") % SLOTS);
        assert!(key_slot(b"ocpp:cp:anything") < SLOTS);
    }

    fn entry(first: i64, last: i64, host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(first),
            Value::Int(last),
            Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ]),
        ])
    }

    #[test]
    fn each_slot_goes_to_the_master_that_serves_its_range() {
        let answer = Value::Array(vec![
            entry(5461, 10922, "127.0.0.1", 7001),
            entry(0, 5460, "127.0.0.1", 7000),
            entry(10923, 16000, "127.0.0.1", 7002),
            entry(16001, 16383, "127.0.0.1", 7000),
            Value::Int(3),
        ]);
        let map = SlotMap::from_cluster_slots(&answer).expect("a map");
        assert_eq!(map.masters().len(), 3);
        let port = |slot| map.master_of(slot).map(|i| map.masters()[i].1);
        assert_eq!(port(0), Some(7000));
        assert_eq!(port(5460), Some(7000));
        assert_eq!(port(5461), Some(7001));
        assert_eq!(port(10922), Some(7001));
        assert_eq!(port(10923), Some(7002));
        assert_eq!(port(16383), Some(7000));
        assert_eq!(port(16384), None);
        let gap =
            SlotMap::from_cluster_slots(&Value::Array(vec![entry(10, 20, "h", 1)])).expect("a map");
        assert_eq!(gap.master_of(9), None);
        assert_eq!(gap.master_of(10), Some(0));
        assert_eq!(gap.master_of(21), None);
        assert!(SlotMap::from_cluster_slots(&Value::Array(vec![])).is_err());
        assert!(SlotMap::from_cluster_slots(&Value::Nil).is_err());
    }
}
