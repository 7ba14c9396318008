//! The code the per-version `Request` and `Response` enums share (decode by action, validate,
//! serialize, `From` each payload, the conversions to and from the versioned
//! [`crate::Request`] / [`crate::Response`]), written once as a macro so the generated files stay
//! short.

/// Declares a payload enum over the actions of a version: `payload_enum! { version = V1_6;
/// /// docs
/// pub enum Request { /// docs
/// Authorize(super::AuthorizeRequest), ... } }`. Each variant is named after its action; an
/// `Action` enum with the same variants must be in scope, and `version` names the variant of the
/// crate-level enum of the same name (`crate::Request::V1_6`).
macro_rules! payload_enum {
    (
        version = $version:ident;
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

        impl From<$name> for $crate::$name {
            fn from(payload: $name) -> Self {
                $crate::$name::$version(alloc::boxed::Box::new(payload))
            }
        }

        $(
            impl From<$payload> for $name {
                fn from(payload: $payload) -> Self {
                    Self::$variant(payload)
                }
            }

            impl From<$payload> for $crate::$name {
                fn from(payload: $payload) -> Self {
                    $crate::$name::$version(alloc::boxed::Box::new($name::$variant(payload)))
                }
            }

            impl TryFrom<$crate::$name> for $payload {
                /// Any other version or action, handed back unchanged.
                type Error = $crate::$name;

                fn try_from(value: $crate::$name) -> Result<Self, Self::Error> {
                    #[allow(unreachable_patterns)]
                    match value {
                        $crate::$name::$version(inner) if matches!(*inner, $name::$variant(_)) => {
                            match *inner {
                                $name::$variant(payload) => Ok(payload),
                                other => Err($crate::$name::$version(alloc::boxed::Box::new(other))),
                            }
                        }
                        other => Err(other),
                    }
                }
            }
        )*
    };
}

pub(crate) use payload_enum;
