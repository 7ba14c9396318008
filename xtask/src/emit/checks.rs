//! The schema's constraints written out as Rust: the `check` and `conforms` code of a field, a
//! struct, a value.

use std::fmt::Write as _;

use crate::model::{Field, IntTy, Ty};

pub(super) fn constraints(ty: &Ty) -> String {
    match ty {
        Ty::String { max_len: Some(n) } => format!("string of at most {n} characters"),
        Ty::String { max_len: None } => "string".to_owned(),
        Ty::Uri { max_len } => match max_len {
            Some(n) => format!("URI of at most {n} characters"),
            None => "URI".to_owned(),
        },
        Ty::DateTime => "RFC 3339 date-time".to_owned(),
        Ty::Int { min, max, .. } => match (min, max) {
            (Some(a), Some(b)) => format!("integer, {a} to {b}"),
            (Some(a), None) => format!("integer, at least {a}"),
            (None, Some(b)) => format!("integer, at most {b}"),
            (None, None) => "integer".to_owned(),
        },
        Ty::Number {
            min,
            max,
            multiple_of,
        } => {
            let mut s = "exact decimal ([`Decimal`])".to_owned();
            if let Some(a) = min {
                let _ = write!(s, ", at least {a}");
            }
            if let Some(b) = max {
                let _ = write!(s, ", at most {b}");
            }
            if let Some(m) = multiple_of {
                let _ = write!(s, ", a multiple of {m}");
            }
            s
        }
        Ty::Bool => "boolean".to_owned(),
        Ty::Named(n) => format!("[`{n}`]"),
        Ty::Any => "any JSON value".to_owned(),
        Ty::Array { item, min, max } => {
            let n = match (min, max) {
                (Some(a), Some(b)) if a == b => format!("exactly {a}"),
                (Some(a), Some(b)) => format!("{a} to {b}"),
                (Some(a), None) => format!("at least {a}"),
                (None, Some(b)) => format!("at most {b}"),
                (None, None) => "any number of".to_owned(),
            };
            format!("array of {n} × {}", constraints(item))
        }
    }
}

fn opt_u64(v: Option<u64>) -> String {
    v.map_or("None".to_owned(), |n| format!("Some({n})"))
}

/// A schema bound (read as an `f64`, whose shortest digits are the schema's) as an exact
/// `Decimal` expression: `0.1` is `Some(crate::Decimal::new(1, 1))`.
pub(super) fn opt_decimal(v: Option<f64>) -> String {
    v.map_or("None".to_owned(), |n| {
        let text = format!("{n}"); // plain notation, shortest round-trip digits
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        let mantissa: i64 = format!("{int}{frac}")
            .parse()
            .unwrap_or_else(|_| panic!("schema bound {n} does not fit a Decimal"));
        format!("Some(crate::Decimal::new({mantissa}, {}))", frac.len())
    })
}

/// The schema's integer bounds narrowed to the Rust type's (32 bits, as OCPP defines them).
pub(super) fn int_bounds(rust: IntTy, min: Option<i64>, max: Option<i64>) -> (i64, i64) {
    let (lo, hi) = match rust {
        IntTy::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        IntTy::U32 => (0, i64::from(u32::MAX)),
    };
    (min.map_or(lo, |m| m.max(lo)), max.map_or(hi, |m| m.min(hi)))
}

/// Statements checking `v` (a `&Value`) at `path` (a `&Path`) against `ty`.
pub(super) fn check_code(ty: &Ty, v: &str, path: &str, depth: usize) -> String {
    match ty {
        Ty::String { max_len } => format!("check::string({v}, {path}, {})?;\n", opt_u64(*max_len)),
        Ty::Uri { max_len } => format!("check::uri({v}, {path}, {})?;\n", opt_u64(*max_len)),
        Ty::DateTime => format!("check::date_time({v}, {path})?;\n"),
        Ty::Int { rust, min, max } => {
            let (lo, hi) = int_bounds(*rust, *min, *max);
            format!("check::integer({v}, {path}, {lo}, {hi})?;\n")
        }
        Ty::Number {
            min,
            max,
            multiple_of,
        } => format!(
            "check::number({v}, {path}, {}, {}, {})?;\n",
            opt_decimal(*min),
            opt_decimal(*max),
            opt_decimal(*multiple_of)
        ),
        Ty::Bool => format!("check::boolean({v}, {path})?;\n"),
        Ty::Named(n) => format!("{n}::check_json({v}, {path}, mode)?;\n"),
        Ty::Any => format!("let _ = ({v}, {path});\n"),
        Ty::Array { item, min, max } => {
            let item_var = format!("item{depth}");
            let index_var = format!("index{depth}");
            let item_path = format!("item_path{depth}");
            format!(
                "for ({index_var}, {item_var}) in check::array({v}, {path}, {}, {})?.iter().enumerate() {{\n\
                 let {item_path} = {path}.index({index_var});\n{}}}\n",
                opt_u64(*min),
                opt_u64(*max),
                check_code(item, &item_var, &format!("&{item_path}"), depth + 1)
            )
        }
    }
}

/// A boolean expression saying whether `v` (a reference to a value of `ty`) keeps the rules
/// serde does not enforce when it builds the value (see `Schema::conforms`); `None` when serde
/// enforces them all (the type alone is the rule).
fn conforms_code(ty: &Ty, v: &str, depth: usize) -> Option<String> {
    match ty {
        Ty::String { max_len } => max_len.map(|m| format!("check::fits({v}, {m})")),
        Ty::Uri { max_len } => Some(match max_len {
            Some(m) => format!("check::is_uri({v}) && check::fits({v}, {m})"),
            None => format!("check::is_uri({v})"),
        }),
        Ty::DateTime | Ty::Bool | Ty::Any => None,
        Ty::Int { rust, min, max } => {
            // Only bounds narrower than the Rust type's need a check: serde enforces those.
            let (lo, hi) = int_bounds(*rust, *min, *max);
            ((lo, hi) != int_bounds(*rust, None, None))
                .then(|| format!("({lo}..={hi}).contains(&i64::from(*{v}))"))
        }
        Ty::Number {
            min,
            max,
            multiple_of,
        } => (min.is_some() || max.is_some() || multiple_of.is_some()).then(|| {
            format!(
                "check::number_fits(*{v}, {}, {}, {})",
                opt_decimal(*min),
                opt_decimal(*max),
                opt_decimal(*multiple_of)
            )
        }),
        Ty::Named(_) => Some(format!("{v}.conforms(mode)")),
        Ty::Array { item, min, max } => {
            let item_var = format!("item{depth}");
            let count = (min.is_some() || max.is_some()).then(|| {
                format!(
                    "check::count_fits({v}.len(), {}, {})",
                    opt_u64(*min),
                    opt_u64(*max)
                )
            });
            let items = conforms_code(item, &item_var, depth + 1)
                .map(|e| format!("{v}.iter().all(|{item_var}| {e})"));
            match (count, items) {
                (Some(c), Some(i)) => Some(format!("{c} && {i}")),
                (c, i) => c.or(i),
            }
        }
    }
}

/// `Schema::conforms` of a struct: every field's rule, an optional field only when present.
pub(super) fn struct_conforms_code(fields: &[Field]) -> String {
    let mut lets = String::new();
    let mut terms = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let var = format!("f{i}");
        let Some(e) = conforms_code(&f.ty, &var, 0) else {
            continue;
        };
        if f.required {
            let _ = writeln!(lets, "        let {var} = &self.{};", f.rust);
            terms.push(e);
        } else {
            terms.push(format!("self.{}.as_ref().is_none_or(|{var}| {e})", f.rust));
        }
    }
    let mut body = if terms.is_empty() {
        "true".to_owned()
    } else {
        terms.join("\n            && ")
    };
    if !body.contains("(mode)") {
        body.insert_str(0, "let _ = mode;\n        ");
    }
    format!("    fn conforms(&self, mode: Mode) -> bool {{\n{lets}        {body}\n    }}\n")
}
