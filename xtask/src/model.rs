//! The schemas of one OCPP version read into a small model: actions, and named types
//! (structs and enums) deduplicated by name and shape.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Map, Value};

use crate::manifest::Manifest;
use crate::{docs, names};

/// One OCPP version: where its schemas are and how its module is called.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VersionSpec {
    /// Module name and schema directory: `v1_6`.
    pub(crate) module: &'static str,
    /// Human name: `OCPP 1.6`.
    pub(crate) title: &'static str,
    /// 1.6 names its files `Action.json` / `ActionResponse.json`.
    pub(crate) legacy_names: bool,
    /// How many actions the schema files must define.
    pub(crate) expected_actions: usize,
}

/// The three versions, in order.
pub(crate) const VERSIONS: [VersionSpec; 3] = [
    VersionSpec {
        module: "v1_6",
        title: "OCPP 1.6",
        legacy_names: true,
        expected_actions: 39,
    },
    VersionSpec {
        module: "v2_0_1",
        title: "OCPP 2.0.1",
        legacy_names: false,
        expected_actions: 64,
    },
    VersionSpec {
        module: "v2_1",
        title: "OCPP 2.1",
        legacy_names: false,
        expected_actions: 91,
    },
];

/// One action: its request and (unless SEND-only) response type.
#[derive(Debug, Clone)]
pub(crate) struct ActionDef {
    pub(crate) name: String,
    pub(crate) request: String,
    pub(crate) request_file: String,
    pub(crate) response: Option<(String, String)>,
}

/// A Rust integer type chosen from the schema's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntTy {
    I32,
    U32,
}

/// A field's type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    String {
        max_len: Option<u64>,
    },
    Uri {
        max_len: Option<u64>,
    },
    DateTime,
    Int {
        rust: IntTy,
        min: Option<i64>,
        max: Option<i64>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
        multiple_of: Option<f64>,
    },
    Bool,
    Named(String),
    /// No `type`: any JSON value.
    Any,
    Array {
        item: Box<Ty>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

/// One property of a struct.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) wire: String,
    pub(crate) rust: String,
    pub(crate) doc: Vec<String>,
    pub(crate) ty: Ty,
    pub(crate) required: bool,
}

/// A named type.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Enum(Vec<String>),
    /// `open`: additional properties allowed (only `CustomDataType`).
    Struct {
        fields: Vec<Field>,
        open: bool,
    },
}

/// A named type and the actions that use it.
#[derive(Debug, Clone)]
pub(crate) struct TypeDef {
    pub(crate) name: String,
    pub(crate) doc: Vec<String>,
    pub(crate) kind: Kind,
    /// Where it was defined first (schema file and JSON pointer), for the docs.
    pub(crate) origin: String,
    pub(crate) users: BTreeSet<String>,
    /// Shape without docs, for deduplication.
    shape: String,
}

impl TypeDef {
    /// True for a request or response payload type.
    pub(crate) fn is_enum(&self) -> bool {
        matches!(self.kind, Kind::Enum(_))
    }
}

/// A whole version.
#[derive(Debug)]
pub(crate) struct Version {
    pub(crate) spec: VersionSpec,
    pub(crate) actions: Vec<ActionDef>,
    pub(crate) types: BTreeMap<String, TypeDef>,
    /// Payload type name -> action name.
    pub(crate) payloads: BTreeMap<String, String>,
    /// Action names, known before any type is named (a type may not take one).
    action_names: BTreeSet<String>,
}

type Result<T> = std::result::Result<T, crate::Error>;

/// Reads all schema files of a version (their hashes already checked against the manifest).
pub(crate) fn load(schemas: &Path, spec: VersionSpec, manifest: &Manifest) -> Result<Version> {
    let mut version = Version {
        spec,
        actions: Vec::new(),
        types: BTreeMap::new(),
        payloads: BTreeMap::new(),
        action_names: BTreeSet::new(),
    };
    let prefix = format!("{}/", spec.module);
    let files: Vec<&String> = manifest.keys().filter(|k| k.starts_with(&prefix)).collect();
    // (action) -> (request file, response file)
    let mut by_action: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    for rel in &files {
        let stem = rel[prefix.len()..].trim_end_matches(".json").to_owned();
        let (action, is_request) = if let Some(a) = stem.strip_suffix("Response") {
            (a.to_owned(), false)
        } else if let Some(a) = stem.strip_suffix("Request").filter(|_| !spec.legacy_names) {
            (a.to_owned(), true)
        } else {
            (stem.clone(), true)
        };
        let entry = by_action.entry(action).or_default();
        let slot = if is_request {
            &mut entry.0
        } else {
            &mut entry.1
        };
        if slot.replace((*rel).clone()).is_some() {
            return Err(format!("{rel}: two schema files for one message").into());
        }
    }
    version.action_names = by_action.keys().cloned().collect();
    for (action, (request, response)) in by_action {
        let request =
            request.ok_or_else(|| format!("{}: response schema without request", action))?;
        let mut def = ActionDef {
            name: action.clone(),
            request: format!("{action}Request"),
            request_file: request.clone(),
            response: None,
        };
        convert_root(&mut version, schemas, &request, &def.request, &action)?;
        if let Some(response) = response {
            let name = format!("{action}Response");
            convert_root(&mut version, schemas, &response, &name, &action)?;
            def.response = Some((name, response));
        }
        version.payloads.insert(def.request.clone(), action.clone());
        if let Some((r, _)) = &def.response {
            version.payloads.insert(r.clone(), action.clone());
        }
        version.actions.push(def);
    }
    if version.actions.len() != spec.expected_actions {
        return Err(format!(
            "{}: {} actions in the schemas, expected {}",
            spec.title,
            version.actions.len(),
            spec.expected_actions
        )
        .into());
    }
    let type_names: BTreeSet<&String> = version.types.keys().collect();
    for action in &version.actions {
        for reserved in [&action.name] {
            if type_names.contains(reserved) {
                return Err(format!(
                    "{}: type name {reserved} collides with an action",
                    spec.title
                )
                .into());
            }
        }
    }
    for reserved in ["Action", "Request", "Response"] {
        if version.types.contains_key(reserved) {
            return Err(format!("{}: type name {reserved} is reserved", spec.title).into());
        }
    }
    Ok(version)
}

/// State while converting one schema file.
struct FileCtx<'a> {
    rel: &'a str,
    root: &'a Value,
    action: &'a str,
    legacy: bool,
}

fn convert_root(
    version: &mut Version,
    schemas: &Path,
    rel: &str,
    name: &str,
    action: &str,
) -> Result<()> {
    let text = std::fs::read_to_string(schemas.join(rel))?;
    let root: Value = serde_json::from_str(&text).map_err(|e| format!("{rel}: {e}"))?;
    let ctx = FileCtx {
        rel,
        root: &root,
        action,
        legacy: version.spec.legacy_names,
    };
    let doc = vec![format!(
        "Payload of the `{action}` {} (schema `{}`).",
        if name.ends_with("Response") {
            "response (CALLRESULT)"
        } else {
            "request"
        },
        rel
    )];
    register(version, &ctx, name, &root, name, doc, rel.to_owned())?;
    Ok(())
}

fn obj<'v>(node: &'v Value, what: &str) -> Result<&'v Map<String, Value>> {
    node.as_object()
        .ok_or_else(|| format!("{what}: schema node is not an object").into())
}

/// Converts a named object or enum node and records it (deduplicated).
fn register(
    version: &mut Version,
    ctx: &FileCtx<'_>,
    name: &str,
    node: &Value,
    path: &str,
    mut doc: Vec<String>,
    origin: String,
) -> Result<()> {
    let map = obj(node, path)?;
    if let Some(d) = map.get("description").and_then(Value::as_str) {
        let mut lines = docs::clean(d);
        if !lines.is_empty() {
            if !doc.is_empty() {
                lines.push(String::new());
                lines.extend(doc);
            }
            doc = lines;
        }
    }
    let kind = match map.get("type").and_then(Value::as_str) {
        Some("string") => {
            let values = map
                .get("enum")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{}: {path}: named string without enum", ctx.rel))?;
            let values: Vec<String> = values
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or("non-string enum value"))
                .collect::<std::result::Result<_, _>>()?;
            Kind::Enum(values)
        }
        Some("object") => {
            let required: BTreeSet<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let open = map.get("additionalProperties") != Some(&Value::Bool(false));
            let mut fields = Vec::new();
            let empty = Map::new();
            let props = map
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            for (wire, prop) in props {
                let prop_path = format!("{path}/{wire}");
                let ty = convert(version, ctx, prop, &prop_path)?;
                let fdoc = prop
                    .get("description")
                    .and_then(Value::as_str)
                    .map(docs::clean)
                    .unwrap_or_default();
                fields.push(Field {
                    wire: wire.clone(),
                    rust: snake_case(wire),
                    doc: fdoc,
                    ty,
                    required: required.contains(wire.as_str()),
                });
            }
            for r in &required {
                if !props.contains_key(*r) {
                    return Err(
                        format!("{}: {path}: required `{r}` has no property", ctx.rel).into(),
                    );
                }
            }
            let mut seen = BTreeSet::new();
            for f in &fields {
                if !seen.insert(f.rust.clone()) || f.rust == "extra" {
                    return Err(
                        format!("{}: {path}: field name {} collides", ctx.rel, f.rust).into(),
                    );
                }
            }
            Kind::Struct { fields, open }
        }
        other => {
            return Err(format!("{}: {path}: cannot name a node of type {other:?}", ctx.rel).into())
        }
    };
    let shape = shape_of(&kind);
    if doc.is_empty() {
        doc.push(format!("The `{name}` type."));
    }
    match version.types.get_mut(name) {
        Some(existing) => {
            if existing.shape != shape {
                return Err(format!(
                    "{}: type {name} defined differently in {} and {}#{path}",
                    version.spec.title, existing.origin, ctx.rel
                )
                .into());
            }
            existing.users.insert(ctx.action.to_owned());
        }
        None => {
            let mut users = BTreeSet::new();
            users.insert(ctx.action.to_owned());
            version.types.insert(
                name.to_owned(),
                TypeDef {
                    name: name.to_owned(),
                    doc,
                    kind,
                    origin,
                    users,
                    shape,
                },
            );
        }
    }
    Ok(())
}

fn shape_of(kind: &Kind) -> String {
    match kind {
        Kind::Enum(values) => format!("enum {values:?}"),
        Kind::Struct { fields, open } => {
            let mut s = format!("struct open={open}");
            for f in fields {
                s.push_str(&format!(" {}:{}:{:?}", f.wire, f.required, f.ty));
            }
            s
        }
    }
}

fn num(map: &Map<String, Value>, key: &str) -> Option<f64> {
    map.get(key).and_then(Value::as_f64)
}

/// Converts a property's schema node to a field type.
fn convert(version: &mut Version, ctx: &FileCtx<'_>, node: &Value, path: &str) -> Result<Ty> {
    let map = obj(node, path)?;
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let def_name = reference
            .strip_prefix("#/definitions/")
            .ok_or_else(|| format!("{}: {path}: unsupported $ref {reference}", ctx.rel))?;
        let def = ctx
            .root
            .get("definitions")
            .and_then(|d| d.get(def_name))
            .ok_or_else(|| format!("{}: {path}: missing definition {def_name}", ctx.rel))?;
        let name = def
            .get("javaType")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| def_name.strip_suffix("Type").unwrap_or(def_name).to_owned());
        // `ClearChargingProfileType` would become `ClearChargingProfile`, the action's name:
        // keep the definition's own name then.
        let name = if version.action_names.contains(&name) {
            def_name.to_owned()
        } else {
            name
        };
        let origin = format!("{}#/definitions/{def_name}", ctx.rel);
        let doc = vec![format!("Schema definition `{def_name}`.")];
        register(
            version,
            ctx,
            &name,
            def,
            &format!("{}/{def_name}", root_name(path)),
            doc,
            origin,
        )?;
        return Ok(Ty::Named(name));
    }
    let ty = map.get("type").and_then(Value::as_str);
    Ok(match ty {
        Some("string") if map.contains_key("enum") => Ty::Named(inline(version, ctx, node, path)?),
        Some("string") => {
            let max_len = map.get("maxLength").and_then(Value::as_u64);
            match map.get("format").and_then(Value::as_str) {
                None => Ty::String { max_len },
                Some("date-time") => Ty::DateTime,
                Some("uri") => Ty::Uri { max_len },
                Some(f) => return Err(format!("{}: {path}: unknown format {f}", ctx.rel).into()),
            }
        }
        Some("integer") => {
            let min = num(map, "minimum").map(|m| m.ceil() as i64);
            let max = num(map, "maximum").map(|m| m.floor() as i64);
            let rust = if min.is_some_and(|m| m >= 0) {
                IntTy::U32
            } else {
                IntTy::I32
            };
            Ty::Int { rust, min, max }
        }
        Some("number") => Ty::Number {
            min: num(map, "minimum"),
            max: num(map, "maximum"),
            multiple_of: num(map, "multipleOf"),
        },
        Some("boolean") => Ty::Bool,
        Some("array") => {
            let items = map
                .get("items")
                .ok_or_else(|| format!("{}: {path}: array without items", ctx.rel))?;
            let item = convert(version, ctx, items, &format!("{path}[]"))?;
            Ty::Array {
                item: Box::new(item),
                min: map.get("minItems").and_then(Value::as_u64),
                max: map.get("maxItems").and_then(Value::as_u64),
            }
        }
        Some("object") => Ty::Named(inline(version, ctx, node, path)?),
        None if !map.contains_key("enum") => Ty::Any,
        other => return Err(format!("{}: {path}: unsupported type {other:?}", ctx.rel).into()),
    })
}

/// The first segment of a path (the payload type).
fn root_name(path: &str) -> &str {
    path.split('/').next().unwrap_or(path)
}

/// Names an inline enum or object (only OCPP 1.6 has them) from the names table.
fn inline(version: &mut Version, ctx: &FileCtx<'_>, node: &Value, path: &str) -> Result<String> {
    if !ctx.legacy {
        return Err(format!("{}: {path}: inline type outside OCPP 1.6", ctx.rel).into());
    }
    let (name, doc) = names::inline_name(path).ok_or_else(|| {
        format!(
            "{}: {path}: no name for this inline type in xtask/src/names.rs",
            ctx.rel
        )
    })?;
    let origin = format!("{} at `{}`", ctx.rel, path);
    register(version, ctx, name, node, path, vec![doc.to_owned()], origin)?;
    Ok(name.to_owned())
}

/// `chargePointVendor` -> `charge_point_vendor`, `EVSEId` -> `evse_id`; keywords get `r#`.
pub(crate) fn snake_case(wire: &str) -> String {
    let chars: Vec<char> = wire.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None => false,
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    const KEYWORDS: [&str; 12] = [
        "type", "ref", "use", "self", "match", "mod", "move", "loop", "where", "async", "impl",
        "fn",
    ];
    if KEYWORDS.contains(&out.as_str()) {
        out.insert_str(0, "r#");
    }
    out
}

/// Wire value -> variant name: `Energy.Active.Import.Register` -> `EnergyActiveImportRegister`,
/// `L1-N` -> `L1N`, `kWh` -> `KWh`, `s309-1P-16A` -> `S3091P16A`.
pub(crate) fn variant_name(wire: &str) -> String {
    let mut out = String::new();
    for part in wire
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
    {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if wire == "%" {
        out = "Percent".to_owned();
    }
    if out.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}
