//! Texts that many charge points repeat (vendor, model, firmware version, boot reason,
//! connector status), kept once for the whole process: a fleet of 10,000 stations of one model
//! holds one copy of "ACME" instead of 10,000 small allocations of 32 bytes each.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};

/// At most this many distinct texts are kept; past it (after dropping those no charge point
/// uses any more) a text gets an allocation of its own, so odd input cannot grow the set.
const MAX_TEXTS: usize = 4096;

/// Longer texts are not worth a lookup (and are unlikely to repeat).
const MAX_LEN: usize = 64;

static TEXTS: LazyLock<Mutex<HashSet<Arc<str>>>> = LazyLock::new(Default::default);

/// `text`, shared with every other user of an equal text. The lock is a leaf: no other lock is
/// taken while it is held.
pub(crate) fn shared_text(text: &str) -> Arc<str> {
    if text.len() > MAX_LEN {
        return Arc::from(text);
    }
    let mut texts = TEXTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(kept) = texts.get(text) {
        return Arc::clone(kept);
    }
    if texts.len() >= MAX_TEXTS {
        texts.retain(|kept| Arc::strong_count(kept) > 1);
        if texts.len() >= MAX_TEXTS {
            return Arc::from(text);
        }
    }
    let kept: Arc<str> = Arc::from(text);
    texts.insert(Arc::clone(&kept));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_allocation() {
        let a = shared_text("SharedTextTestVendor");
        let b = shared_text(&String::from("SharedTextTestVendor"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "SharedTextTestVendor");
        let long = "x".repeat(MAX_LEN + 1);
        assert!(!Arc::ptr_eq(&shared_text(&long), &shared_text(&long)));
    }
}
