//! Texts that many charge points repeat (vendor, model, firmware version, boot reason,
//! connector status), kept once for the whole process: a fleet of 10,000 stations of one model
//! holds one copy of "ACME" instead of 10,000 small allocations of 32 bytes each.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, LazyLock, Mutex};

/// A text kept once for the whole process (see [`BootDetails`](super::BootDetails)): one
/// pointer, 8 bytes where an `Arc<str>` is 16 (a fat pointer), so the charge-point record's
/// four of them take 32 bytes less. The text behind it is one more allocation per distinct
/// text, which the fleet shares.
///
/// ```
/// use ocpp_reference_csms::SharedText;
/// let text = SharedText::from("ACME");
/// assert_eq!((&*text, text.len()), ("ACME", 4));
/// assert_eq!(std::mem::size_of::<Option<SharedText>>(), 8);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedText(Arc<Box<str>>);

impl From<&str> for SharedText {
    /// A text of its own, not shared (the CSMS shares what charge points send).
    fn from(text: &str) -> SharedText {
        SharedText(Arc::new(Box::from(text)))
    }
}

impl Deref for SharedText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedText {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self.0, f)
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self.0, f)
    }
}

/// At most this many distinct texts are kept; past it (after dropping those no charge point
/// uses any more) a text gets an allocation of its own, so odd input cannot grow the set.
const MAX_TEXTS: usize = 4096;

/// Longer texts are not worth a lookup (and are unlikely to repeat).
const MAX_LEN: usize = 64;

static TEXTS: LazyLock<Mutex<HashSet<SharedText>>> = LazyLock::new(Default::default);

/// `text`, shared with every other user of an equal text. The lock is a leaf: no other lock is
/// taken while it is held.
pub(crate) fn shared_text(text: &str) -> SharedText {
    if text.len() > MAX_LEN {
        return SharedText::from(text);
    }
    let mut texts = TEXTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(kept) = texts.get(text) {
        return kept.clone();
    }
    if texts.len() >= MAX_TEXTS {
        texts.retain(|kept| Arc::strong_count(&kept.0) > 1);
        if texts.len() >= MAX_TEXTS {
            return SharedText::from(text);
        }
    }
    let kept = SharedText::from(text);
    texts.insert(kept.clone());
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_allocation() {
        let a = shared_text("SharedTextTestVendor");
        let b = shared_text(&String::from("SharedTextTestVendor"));
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(&*a, "SharedTextTestVendor");
        let long = "x".repeat(MAX_LEN + 1);
        assert!(!Arc::ptr_eq(&shared_text(&long).0, &shared_text(&long).0));
    }
}
