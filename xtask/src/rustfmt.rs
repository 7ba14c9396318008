//! Runs `rustfmt` on generated text so that `cargo fmt --check` stays clean.

use std::io::Write;
use std::process::{Command, Stdio};

/// Formats one file's text with the toolchain's rustfmt (edition 2021, default configuration).
pub(crate) fn format(text: &str) -> Result<String, crate::Error> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    if !output.status.success() {
        return Err(format!(
            "rustfmt failed: {}\n--- input ---\n{}",
            String::from_utf8_lossy(&output.stderr),
            text.lines().take(60).collect::<Vec<_>>().join("\n")
        )
        .into());
    }
    Ok(String::from_utf8(output.stdout)?)
}
