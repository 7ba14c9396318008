//! Connection storage: a slab (a `Vec` of slots reused through a free list) whose keys carry a
//! generation, so a key to a connection that is gone never reaches the connection that reuses
//! its slot.
//!
//! The key is also the mio [`Token`]: `generation << 32 | index`. A readiness event, a timer
//! entry or a cross-thread command that names a closed connection finds a slot with another
//! generation (or an empty slot) and is dropped, which is what makes lazy deletion in the timer
//! heap and late events after a close safe.

use mio::Token;

/// A generation-checked reference to a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    /// The mio token for this key.
    pub fn token(self) -> Token {
        Token((u64::from(self.generation) << 32 | u64::from(self.index)) as usize)
    }

    /// The slot's index.
    pub fn index(self) -> u32 {
        self.index
    }

    /// The slot's generation when the key was made.
    pub fn generation(self) -> u32 {
        self.generation
    }

    /// The key a token encodes (not necessarily live).
    pub fn from_token(token: Token) -> Key {
        let raw = token.0 as u64;
        Key {
            index: raw as u32,
            generation: (raw >> 32) as u32,
        }
    }
}

#[derive(Debug)]
struct Slot<T> {
    /// Starts at 1 and grows each time the slot is freed: generation 0 never names a value,
    /// so tokens with small values stay free for the listeners and the waker.
    generation: u32,
    value: Option<T>,
}

/// The bytes of one slot holding a `T` (its value inline, and the generation).
#[cfg(test)]
pub(super) fn slot_size<T>() -> usize {
    std::mem::size_of::<Slot<T>>()
}

/// Values addressed by generation-checked [`Key`]s.
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its key.
    pub fn insert(&mut self, value: T) -> Key {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Key {
                index,
                generation: slot.generation,
            };
        }
        let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 connections");
        self.slots.push(Slot {
            generation: 1,
            value: Some(value),
        });
        Key {
            index,
            generation: 1,
        }
    }

    /// The value for `key`, if it is still the one the key was made for.
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation != key.generation {
            return None;
        }
        slot.value.as_mut()
    }

    /// The key of the value in slot `index`, if one is stored there.
    pub fn key_at(&self, index: u32) -> Option<Key> {
        let slot = self.slots.get(index as usize)?;
        slot.value.as_ref().map(|_| Key {
            index,
            generation: slot.generation,
        })
    }

    /// Removes and returns the value for `key`; the slot's next value gets a new generation.
    pub fn remove(&mut self, key: Key) -> Option<T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation != key.generation {
            return None;
        }
        let value = slot.value.take()?;
        // Skip 0 on wrap-around so that a live key never encodes a reserved token.
        slot.generation = slot.generation.checked_add(1).unwrap_or(1);
        self.free.push(key.index);
        self.len -= 1;
        Some(value)
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The keys of every stored value (a snapshot, so the caller may mutate while iterating).
    pub fn keys(&self) -> Vec<Key> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.value.is_some())
            .map(|(index, slot)| Key {
                index: index as u32,
                generation: slot.generation,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_keys_miss() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        assert_eq!(Key::from_token(a.token()), a);
        assert_eq!(slab.remove(a), Some("a"));
        let b = slab.insert("b");
        assert_ne!(a, b);
        assert_eq!(slab.get_mut(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get_mut(b), Some(&mut "b"));
        assert_eq!(slab.len(), 1);
        assert_eq!(slab.keys(), vec![b]);
        // Tokens of live keys are never 0..=u32::MAX (generation >= 1).
        assert!(b.token().0 > u32::MAX as usize);
    }
}
