//! A first-in first-out queue that costs one null pointer while it is empty: the CALLs queued
//! behind ours in flight and the peer's CALLs held behind its unanswered one are rare, so an
//! idle connection should not pay a `VecDeque` (32 bytes) for each.

use std::collections::VecDeque;

/// A `VecDeque` allocated on the first push and freed when the last element is taken.
/// (Boxed on purpose: the box is the point, a null pointer while empty.)
#[derive(Debug)]
#[allow(clippy::box_collection)]
pub(super) struct LazyQueue<T>(Option<Box<VecDeque<T>>>);

impl<T> Default for LazyQueue<T> {
    fn default() -> Self {
        LazyQueue(None)
    }
}

impl<T> LazyQueue<T> {
    pub(super) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.len())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Elements the allocated queue has room for (zero while none is allocated).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.capacity())
    }

    /// Heap bytes held: the queue's box and its buffer.
    pub(super) fn heap_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |q| {
            std::mem::size_of::<VecDeque<T>>() + q.capacity() * std::mem::size_of::<T>()
        })
    }

    pub(super) fn push_back(&mut self, value: T) {
        self.0.get_or_insert_with(Default::default).push_back(value);
    }

    /// The elements, front to back.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().flat_map(|q| q.iter())
    }

    /// Takes out, in order, the elements `take` picks; the others keep their order.
    pub(super) fn take_where(&mut self, mut take: impl FnMut(&T) -> bool) -> Vec<T> {
        let Some(queue) = self.0.as_mut() else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        for _ in 0..queue.len() {
            let Some(value) = queue.pop_front() else {
                break;
            };
            if take(&value) {
                taken.push(value);
            } else {
                queue.push_back(value);
            }
        }
        if queue.is_empty() {
            self.0 = None;
        }
        taken
    }

    pub(super) fn pop_front(&mut self) -> Option<T> {
        let queue = self.0.as_mut()?;
        let value = queue.pop_front();
        if queue.is_empty() {
            self.0 = None;
        }
        value
    }
}

impl<T> IntoIterator for LazyQueue<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::option::IntoIter<VecDeque<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.map(|q| *q).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocated_only_while_not_empty() {
        let mut queue = LazyQueue::default();
        assert_eq!((queue.len(), queue.heap_bytes()), (0, 0));
        queue.push_back(1);
        queue.push_back(2);
        assert_eq!(queue.len(), 2);
        assert!(queue.heap_bytes() > 0);
        assert_eq!(queue.pop_front(), Some(1));
        assert!(!queue.is_empty());
        assert_eq!(queue.pop_front(), Some(2));
        assert!(queue.is_empty());
        assert_eq!((queue.capacity(), queue.heap_bytes()), (0, 0));
        assert_eq!(queue.pop_front(), None);
        queue.push_back(3);
        assert_eq!(queue.into_iter().collect::<Vec<_>>(), [3]);
    }
}
