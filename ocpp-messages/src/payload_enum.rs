//! The code the per-version `Request` and `Response` enums share (decode by action, validate,
//! serialize, `From` each payload), written once as a macro so the generated files stay short.

/// Declares a payload enum over the actions of a version: `payload_enum! { /// docs
/// pub enum Request { /// docs
/// Authorize(super::AuthorizeRequest), ... } }`. Each variant is named after its action; an
/// `Action` enum with the same variants must be in scope.
macro_rules! payload_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident($payload:ty), )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant)]
        pub enum $name {
            $( $(#[$variant_meta])* $variant($payload), )*
        }

        impl $name {
            /// The action this payload belongs to.
            pub fn action(&self) -> Action {
                match self {
                    $( Self::$variant(_) => Action::$variant, )*
                }
            }

            /// Decodes the payload of `action` in `mode`.
            pub fn decode(
                action: Action,
                payload: &str,
                mode: $crate::validate::Mode,
            ) -> Result<Self, $crate::decode::DecodeError> {
                #[allow(unreachable_patterns)]
                match action {
                    $( Action::$variant => Ok(Self::$variant(
                        <$payload as $crate::action::Payload>::decode_with(payload, mode)?,
                    )), )*
                    other => Err($crate::decode::DecodeError::NoResponse(other.as_str())),
                }
            }

            /// The payload as JSON text (optional properties with no value left out).
            pub fn to_json(&self) -> Result<alloc::string::String, serde_json::Error> {
                serde_json::to_string(self)
            }

            /// Checks the payload against its schema in strict mode (e.g. before sending it).
            pub fn validate(&self) -> Result<(), $crate::validate::Violation> {
                match self {
                    $( Self::$variant(payload) => $crate::action::Payload::validate(payload), )*
                }
            }
        }

        #[cfg(feature = "proptest")]
        impl $name {
            /// Payloads of `action` that its schema accepts (`None`: the action has no such
            /// payload, e.g. the response of a SEND-only action).
            pub fn arbitrary_for(
                action: Action,
            ) -> Option<proptest::strategy::BoxedStrategy<Self>> {
                use proptest::strategy::Strategy as _;
                #[allow(unreachable_patterns)]
                match action {
                    $( Action::$variant => Some(
                        proptest::arbitrary::any::<$payload>().prop_map(Self::$variant).boxed(),
                    ), )*
                    _ => None,
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(payload) => payload.serialize(serializer), )*
                }
            }
        }

        $(
            impl From<$payload> for $name {
                fn from(payload: $payload) -> Self {
                    Self::$variant(payload)
                }
            }
        )*
    };
}

pub(crate) use payload_enum;
