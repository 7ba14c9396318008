//! Placeholder: envelope.
