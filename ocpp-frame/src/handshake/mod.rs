//! Placeholder: the HTTP/1.1 upgrade handshake.
