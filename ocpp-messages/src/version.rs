//! Placeholder: version.
