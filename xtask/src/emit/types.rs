//! A schema type written out as Rust: its field types, struct (with its `new` and `with_` builders)
//! or enum.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::arbitrary::arbitrary_code;
use super::checks::{check_code, constraints, struct_conforms_code};
use super::Imports;
use crate::docs;
use crate::model::{variant_name, Field, IntTy, Kind, Ty, TypeDef};

fn rust_type(ty: &Ty, imports: &mut Imports) -> String {
    match ty {
        Ty::String { .. } | Ty::Uri { .. } => {
            imports.string = true;
            "String".to_owned()
        }
        Ty::DateTime => {
            imports.date_time = true;
            "DateTime".to_owned()
        }
        Ty::Int {
            rust: IntTy::I32, ..
        } => "i32".to_owned(),
        Ty::Int {
            rust: IntTy::U32, ..
        } => "u32".to_owned(),
        Ty::Number { .. } => {
            imports.decimal = true;
            "Decimal".to_owned()
        }
        Ty::Bool => "bool".to_owned(),
        Ty::Named(n) => {
            imports.named.insert(n.clone());
            n.clone()
        }
        Ty::Any => {
            imports.value = true;
            "Value".to_owned()
        }
        Ty::Array { item, .. } => {
            imports.vec = true;
            format!("Vec<{}>", rust_type(item, imports))
        }
    }
}

fn struct_code(t: &TypeDef, fields: &[Field], open: bool, imports: &mut Imports) -> String {
    imports.serde = true;
    imports.validate = true;
    imports.value = true;
    let mut s = docs::render(&t.doc, "");
    // Construction rule (see `builder_code`): `Default` when every field is optional, `new(..)`
    // taking the required fields otherwise.
    if fields.iter().any(|f| f.required) {
        s.push_str("#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]\n");
    } else {
        s.push_str("#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]\n");
    }
    let _ = writeln!(s, "pub struct {} {{", t.name);
    for f in fields {
        let mut doc = f.doc.clone();
        if !doc.is_empty() {
            doc.push(String::new());
        }
        doc.push(format!(
            "`{}`: {}, {}.",
            f.wire,
            if f.required { "required" } else { "optional" },
            constraints(&f.ty)
        ));
        s.push_str(&docs::render(&doc, "    "));
        let ty = rust_type(&f.ty, imports);
        if f.required {
            let _ = writeln!(
                s,
                "    #[serde(rename = \"{}\")]\n    pub {}: {ty},",
                f.wire, f.rust
            );
        } else {
            let _ = writeln!(
                s,
                "    #[serde(rename = \"{}\")]\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub {}: Option<{ty}>,",
                f.wire, f.rust
            );
        }
    }
    if open {
        imports.map = true;
        imports.string = true;
        s.push_str(
            "    /// Further properties: the schema allows any (vendor-specific) JSON here.\n",
        );
        s.push_str("    #[serde(flatten)]\n    pub extra: Map<String, Value>,\n");
    }
    s.push_str("}\n\n");
    s.push_str(&builder_code(t, fields, open, imports));
    let _ = writeln!(s, "impl Schema for {} {{", t.name);
    s.push_str("    fn check_json(value: &Value, path: &Path<'_>, mode: Mode) -> Result<(), Violation> {\n");
    s.push_str("        let object = check::object(value, path)?;\n");
    if !open {
        let names: Vec<String> = fields.iter().map(|f| format!("\"{}\"", f.wire)).collect();
        let _ = writeln!(
            s,
            "        check::known_fields(object, path, mode, &[{}])?;",
            names.join(", ")
        );
    } else {
        s.push_str("        let _ = (object, mode);\n");
    }
    for f in fields {
        let body = check_code(&f.ty, "v", "path", 0);
        if f.required {
            let _ = write!(
                s,
                "        {{\n let path = &path.field(\"{w}\");\n let v = check::required(object, \"{w}\", path)?;\n{body}}}\n",
                w = f.wire
            );
        } else {
            let _ = write!(
                s,
                "        if let Some(v) = check::optional(object, \"{w}\", mode) {{\n let path = &path.field(\"{w}\");\n{body}}}\n",
                w = f.wire
            );
        }
    }
    s.push_str("        Ok(())\n    }\n\n");
    s.push_str(&struct_conforms_code(fields));
    s.push_str("}\n\n");
    s.push_str(&arbitrary_code(t, fields, open));
    s
}

/// The parameter type of a constructor or setter taking a `ty`, and the expression turning the
/// parameter `name` into the field's value: strings take `impl Into<String>`, the rest the type.
fn param(ty: &Ty, name: &str, imports: &mut Imports) -> (String, String) {
    match ty {
        Ty::String { .. } | Ty::Uri { .. } => {
            imports.string = true;
            ("impl Into<String>".to_owned(), format!("{name}.into()"))
        }
        other => (rust_type(other, imports), name.to_owned()),
    }
}

/// Constructors and setters of a struct. The rule, the same for every struct:
/// - at least one required field: `new(<required fields in schema order>)`, the optional fields
///   `None` (and `extra` empty); no `Default`, as no value would be valid;
/// - every field optional (empty structs included): `#[derive(Default)]` and no `new()`;
/// - each optional field `foo`: `with_foo(self, value) -> Self`, setting `Some(value)`.
fn builder_code(t: &TypeDef, fields: &[Field], open: bool, imports: &mut Imports) -> String {
    let required: Vec<&Field> = fields.iter().filter(|f| f.required).collect();
    let optional: Vec<&Field> = fields.iter().filter(|f| !f.required).collect();
    if optional.is_empty() && required.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(s, "impl {} {{", t.name);
    if !required.is_empty() {
        let wires: Vec<String> = required.iter().map(|f| format!("`{}`", f.wire)).collect();
        let rest = if optional.is_empty() {
            ""
        } else {
            "; the optional ones start as `None`"
        };
        let _ = writeln!(
            s,
            "    /// Creates a value from its required fields ({}){rest}.",
            wires.join(", ")
        );
        if required.len() > 7 {
            s.push_str("    #[allow(clippy::too_many_arguments)]\n");
        }
        let mut params = Vec::new();
        let mut inits = Vec::new();
        for f in fields {
            if f.required {
                let (ty, value) = param(&f.ty, &f.rust, imports);
                params.push(format!("{}: {ty}", f.rust));
                inits.push(if value == f.rust {
                    value
                } else {
                    format!("{}: {value}", f.rust)
                });
            } else {
                inits.push(format!("{}: None", f.rust));
            }
        }
        if open {
            inits.push("extra: Map::new()".to_owned());
        }
        let _ = writeln!(
            s,
            "    pub fn new({}) -> Self {{\n        Self {{ {} }}\n    }}\n",
            params.join(", "),
            inits.join(", ")
        );
    }
    for f in &optional {
        let (ty, value) = param(&f.ty, "value", imports);
        let _ = writeln!(
            s,
            "    /// Sets `{}` (optional).\n    #[must_use]\n    pub fn with_{}(mut self, value: {ty}) -> Self {{\n        self.{} = Some({value});\n        self\n    }}\n",
            f.wire,
            f.rust.trim_start_matches("r#"),
            f.rust
        );
    }
    s.push_str("}\n\n");
    s
}

fn enum_code(
    t: &TypeDef,
    values: &[String],
    imports: &mut Imports,
) -> Result<String, crate::Error> {
    imports.string = true;
    let mut s = docs::render(&t.doc, "");
    s.push_str("#[derive(Debug, Clone, PartialEq, Eq, Hash)]\n");
    let _ = writeln!(s, "pub enum {} {{", t.name);
    let mut seen = BTreeSet::new();
    let mut pairs = Vec::new();
    for value in values {
        let variant = variant_name(value);
        if variant == "Unrecognized" || !seen.insert(variant.clone()) {
            return Err(format!("{}: variant {variant} collides", t.name).into());
        }
        let _ = writeln!(s, "    /// `{value}`\n    {variant},");
        pairs.push(format!("{variant} => \"{value}\""));
    }
    s.push_str("    /// A value the schema does not list; only lenient decoding produces it.\n    Unrecognized(String),\n}\n\n");
    let _ = writeln!(
        s,
        "crate::wire_enum::wire_enum!({} {{ {} }});\n",
        t.name,
        pairs.join(", ")
    );
    Ok(s)
}

pub(super) fn type_code(t: &TypeDef, imports: &mut Imports) -> Result<String, crate::Error> {
    match &t.kind {
        Kind::Enum(values) => enum_code(t, values, imports),
        Kind::Struct { fields, open } => Ok(struct_code(t, fields, *open, imports)),
    }
}
