//! Repository tasks for the OCPP workspace.
//!
//! - `cargo xtask codegen`: regenerate the typed messages of `ocpp-messages` from the JSON schemas
//!   in `ocpp-messages/schemas/` (after checking them against `schemas/MANIFEST.json`).
//! - `cargo xtask codegen --check`: regenerate in memory and fail when a committed file differs.
//! - `cargo xtask import-schemas <unpacked ocpp wheel> <wheel sha256>`: copy the schema files of the
//!   PyPI `ocpp` package into `ocpp-messages/schemas/` and rewrite the manifest.

mod docs;
mod emit;
mod manifest;
mod model;
mod names;
mod rustfmt;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Everything that can stop a task; printed as one line.
type Error = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen(args.iter().any(|a| a == "--check")),
        Some("import-schemas") => match (args.get(1), args.get(2)) {
            (Some(dir), Some(sha)) => manifest::import(&messages_dir(), Path::new(dir), sha),
            _ => {
                Err("usage: cargo xtask import-schemas <unpacked-wheel-dir> <wheel-sha256>".into())
            }
        },
        _ => Err("usage: cargo xtask codegen [--check] | import-schemas <dir> <sha256>".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `ocpp-messages/` of this workspace.
fn messages_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|p| p.join("ocpp-messages"))
        .unwrap_or_else(|| PathBuf::from("ocpp-messages"))
}

/// Regenerates (or checks) the generated modules of every version.
fn codegen(check: bool) -> Result<(), Error> {
    let root = messages_dir();
    let manifest = manifest::verify(&root.join("schemas"))?;
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for spec in model::VERSIONS {
        let version = model::load(&root.join("schemas"), spec, &manifest)?;
        for (rel, text) in emit::version(&version)? {
            files.push((root.join("src").join(spec.module).join(rel), text));
        }
    }
    let mut out = Vec::with_capacity(files.len());
    for (path, text) in files {
        out.push((path, rustfmt::format(&text)?));
    }
    let mut stale = Vec::new();
    for spec in model::VERSIONS {
        let dir = root.join("src").join(spec.module);
        for existing in walk(&dir)? {
            if !out.iter().any(|(p, _)| *p == existing) {
                stale.push(existing);
            }
        }
    }
    if check {
        let mut differ = Vec::new();
        for (path, text) in &out {
            if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
                differ.push(path.display().to_string());
            }
        }
        differ.extend(
            stale
                .iter()
                .map(|p| format!("{} (not generated)", p.display())),
        );
        if !differ.is_empty() {
            return Err(format!(
                "{} generated file(s) out of date; run `cargo xtask codegen`:\n  {}",
                differ.len(),
                differ.join("\n  ")
            )
            .into());
        }
        println!("codegen --check: {} files up to date", out.len());
        return Ok(());
    }
    for path in &stale {
        std::fs::remove_file(path)?;
    }
    let mut written = 0;
    for (path, text) in &out {
        if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
            written += 1;
        }
    }
    println!(
        "codegen: {} files, {} written, {} removed",
        out.len(),
        written,
        stale.len()
    );
    Ok(())
}

/// All `.rs` files under `dir` (none when it does not exist).
fn walk(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    if !dir.exists() {
        return Ok(found);
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            found.extend(walk(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    Ok(found)
}
