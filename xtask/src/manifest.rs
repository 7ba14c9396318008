//! `schemas/MANIFEST.json`: where the schema files come from and their SHA-256, checked before
//! every code generation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Name of the manifest file inside `ocpp-messages/schemas/`.
const FILE: &str = "MANIFEST.json";

/// Schema directories: (directory under `schemas/`, directory inside the wheel).
const DIRS: [(&str, &str); 3] = [
    ("v1_6", "ocpp/v16/schemas"),
    ("v2_0_1", "ocpp/v201/schemas"),
    ("v2_1", "ocpp/v21/schemas"),
];

/// The verified manifest: relative path -> SHA-256 (hex).
pub(crate) type Manifest = BTreeMap<String, String>;

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// Reads the manifest and checks every listed file's hash, and that no unlisted schema exists.
pub(crate) fn verify(schemas: &Path) -> Result<Manifest, crate::Error> {
    let text = std::fs::read_to_string(schemas.join(FILE))
        .map_err(|e| format!("{}: {e}", schemas.join(FILE).display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)?;
    let files = json
        .get("files")
        .and_then(|f| f.as_object())
        .ok_or("MANIFEST.json: no `files` object")?;
    let mut manifest = Manifest::new();
    for (rel, hash) in files {
        let hash = hash.as_str().ok_or("MANIFEST.json: hash is not a string")?;
        let bytes = std::fs::read(schemas.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
        let actual = sha256_hex(&bytes);
        if actual != hash {
            return Err(
                format!("{rel}: SHA-256 {actual} differs from the manifest's {hash}").into(),
            );
        }
        manifest.insert(rel.clone(), hash.to_owned());
    }
    for (dir, _) in DIRS {
        for entry in std::fs::read_dir(schemas.join(dir))? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let rel = format!("{dir}/{name}");
            if !manifest.contains_key(&rel) {
                return Err(format!("{rel} is not listed in MANIFEST.json").into());
            }
        }
    }
    Ok(manifest)
}

/// Copies the schemas out of an unpacked `ocpp` wheel and writes the manifest.
pub(crate) fn import(
    messages: &Path,
    wheel: &Path,
    wheel_sha256: &str,
) -> Result<(), crate::Error> {
    let schemas = messages.join("schemas");
    let mut files = serde_json::Map::new();
    for (dir, source) in DIRS {
        let target = schemas.join(dir);
        if target.exists() {
            std::fs::remove_dir_all(&target)?;
        }
        std::fs::create_dir_all(&target)?;
        let mut names: Vec<_> = std::fs::read_dir(wheel.join(source))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        for name in names {
            let bytes = std::fs::read(wheel.join(source).join(&name))?;
            std::fs::write(target.join(&name), &bytes)?;
            files.insert(format!("{dir}/{name}"), sha256_hex(&bytes).into());
        }
    }
    let manifest = serde_json::json!({
        "package": "ocpp",
        "registry": "PyPI",
        "version": "2.1.0",
        "artifact": "ocpp-2.1.0-py3-none-any.whl",
        "artifact_sha256": wheel_sha256,
        "obtained_with": "pip download ocpp==2.1.0 --no-deps; unzip; cargo xtask import-schemas <dir> <sha256>",
        "files": files,
    });
    let mut text = serde_json::to_string_pretty(&manifest)?;
    text.push('\n');
    std::fs::write(schemas.join(FILE), text)?;
    println!("imported {} schema files", files.len());
    Ok(())
}
