//! The CSMS's records of every charge point it has seen, found by identity.
//!
//! A hash table of boxed records whose slot is only the box: the key is the record's own
//! [`ChargePointRecord::identity`], compared through the box on a lookup (the record is read right
//! after anyway). A `HashMap<ChargePointIdentity, Box<ChargePointRecord>>` keeps the identity in
//! the slot beside the box, 24 bytes where this is 8: at 10,000 charge points (16,384 slots
//! after doubling, every one touched) about 26 bytes per charge point.

use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use ocpp_proto::ChargePointIdentity;

use super::ChargePointRecord;

/// The records, one per identity.
#[derive(Debug, Default)]
pub(super) struct Fleet {
    hasher: RandomState,
    records: HashTable<Box<ChargePointRecord>>,
}

impl Fleet {
    fn hash(&self, identity: &str) -> u64 {
        self.hasher.hash_one(identity)
    }

    /// The record of `identity`, created on first sight.
    pub(super) fn entry(&mut self, identity: &ChargePointIdentity) -> &mut ChargePointRecord {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(identity.as_str());
        let entry = self.records.entry(
            hash,
            |record| record.identity.as_str() == identity.as_str(),
            |record| hasher.hash_one(record.identity.as_str()),
        );
        match entry {
            Entry::Occupied(occupied) => occupied.into_mut(),
            Entry::Vacant(vacant) => vacant
                .insert(Box::new(ChargePointRecord::new(identity.clone())))
                .into_mut(),
        }
    }

    /// The record of `identity`, if it was ever seen.
    pub(super) fn get<Q: Borrow<str> + ?Sized>(&self, identity: &Q) -> Option<&ChargePointRecord> {
        let identity = identity.borrow();
        self.records
            .find(self.hash(identity), |record| {
                record.identity.as_str() == identity
            })
            .map(|record| &**record)
    }

    /// The record of `identity` to change, if it was ever seen.
    pub(super) fn get_mut<Q: Borrow<str> + ?Sized>(
        &mut self,
        identity: &Q,
    ) -> Option<&mut ChargePointRecord> {
        let identity = identity.borrow();
        let hash = self.hash(identity);
        self.records
            .find_mut(hash, |record| record.identity.as_str() == identity)
            .map(|record| &mut **record)
    }

    /// Every record, in no order.
    pub(super) fn values(&self) -> impl Iterator<Item = &ChargePointRecord> {
        self.records.iter().map(|record| &**record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(text: &str) -> ChargePointIdentity {
        ChargePointIdentity::new(text.into(), true).unwrap()
    }

    #[test]
    fn one_record_per_identity() {
        let mut fleet = Fleet::default();
        for _ in 0..3 {
            for n in 0..1000 {
                let id = identity(&format!("CP{n}"));
                assert_eq!(fleet.entry(&id).identity, id);
            }
        }
        assert_eq!(fleet.values().count(), 1000);
        assert_eq!(fleet.get("CP7").map(|cp| cp.identity.as_str()), Some("CP7"));
        assert!(fleet.get("CP1000").is_none());
        let cp = fleet.get_mut("CP999").unwrap();
        cp.triggered = true;
        assert!(fleet.get("CP999").unwrap().triggered);
        assert!(!fleet.get("CP998").unwrap().triggered);
        assert_eq!(std::mem::size_of::<Box<ChargePointRecord>>(), 8);
    }
}
