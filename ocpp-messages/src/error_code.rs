//! Placeholder: error_code.
