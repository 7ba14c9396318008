//! The proptest strategies of the generated types: values each schema accepts.

use std::fmt::Write as _;

use super::checks::{int_bounds, opt_decimal};
use crate::model::{Field, IntTy, Ty, TypeDef};

/// A proptest strategy expression for values of `ty` the schema accepts.
fn strategy(ty: &Ty) -> String {
    match ty {
        Ty::String { max_len } => format!("crate::arbitrary::string({})", max_len.unwrap_or(64)),
        Ty::Uri { .. } => "crate::arbitrary::uri()".to_owned(),
        Ty::DateTime => "crate::arbitrary::date_time()".to_owned(),
        Ty::Int { rust, min, max } => {
            let (lo, hi) = int_bounds(*rust, *min, *max);
            let suffix = match rust {
                IntTy::I32 => "i32",
                IntTy::U32 => "u32",
            };
            format!("{lo}{suffix}..={hi}{suffix}")
        }
        Ty::Number {
            min,
            max,
            multiple_of,
        } => {
            format!(
                "crate::arbitrary::number({}, {}, {})",
                opt_decimal(*min),
                opt_decimal(*max),
                opt_decimal(*multiple_of)
            )
        }
        Ty::Bool => "proptest::bool::ANY".to_owned(),
        Ty::Named(n) => format!("proptest::arbitrary::any::<{n}>()"),
        Ty::Any => "crate::arbitrary::any_json()".to_owned(),
        Ty::Array { item, min, max } => {
            let lo = min.unwrap_or(0);
            let hi = max.unwrap_or(lo + 3).min(lo + 3);
            format!("proptest::collection::vec({}, {lo}..={hi})", strategy(item))
        }
    }
}

/// `impl Arbitrary` (feature `proptest`): fields in nested tuples of at most 8.
pub(super) fn arbitrary_code(t: &TypeDef, fields: &[Field], open: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#[cfg(feature = \"proptest\")]\nimpl proptest::arbitrary::Arbitrary for {} {{\n    type Parameters = ();\n    type Strategy = proptest::strategy::BoxedStrategy<Self>;\n\n    fn arbitrary_with((): ()) -> Self::Strategy {{\n        use proptest::strategy::Strategy as _;",
        t.name
    );
    let extra = if open {
        "extra: serde_json::Map::new(),"
    } else {
        ""
    };
    if fields.is_empty() {
        let _ = writeln!(
            s,
            "        proptest::strategy::Just({} {{ {extra} }}).boxed()\n    }}\n}}\n",
            t.name
        );
        return s;
    }
    let mut groups = Vec::new();
    let mut patterns = Vec::new();
    for (g, chunk) in fields.chunks(8).enumerate() {
        let mut strategies = Vec::new();
        let mut names = Vec::new();
        for (i, f) in chunk.iter().enumerate() {
            let base = strategy(&f.ty);
            strategies.push(if f.required {
                base
            } else {
                format!("proptest::option::of({base})")
            });
            names.push(format!("f{}", g * 8 + i));
        }
        groups.push(format!("({},)", strategies.join(", ")));
        patterns.push(format!("({},)", names.join(", ")));
    }
    let inits: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| format!("{}: f{i}", f.rust))
        .collect();
    let _ = writeln!(
        s,
        "        ({},)\n            .prop_map(|({},)| {} {{ {}, {extra} }})\n            .boxed()\n    }}\n}}\n",
        groups.join(", "),
        patterns.join(", "),
        t.name,
        inits.join(", ")
    );
    s
}
