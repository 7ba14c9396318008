#!/usr/bin/env python3
"""Writes PROTOCOL.md from doc/PROTOCOL.md.in with each {{name.lua}} replaced by src/scripts/name.lua."""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent
text = (root / "doc" / "PROTOCOL.md.in").read_text()


def script(match):
    return (root / "src" / "scripts" / match.group(1)).read_text().rstrip("\n")


(root / "PROTOCOL.md").write_text(re.sub(r"\{\{([a-z_]+\.lua)\}\}", script, text))
