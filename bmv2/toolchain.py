"""Locating the p4lang tools (p4c-bm2-ss, simple_switch_grpc) on this machine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

EXTRA_PATHS = ("/opt/p4/install/bin", "/usr/local/bin", "/usr/bin")


def find_tool(names: tuple[str, ...], env_var: str) -> Path | None:
    """$env_var if set (None when it names no file), else the first of `names`
    on PATH or in EXTRA_PATHS."""
    if os.environ.get(env_var):
        path = Path(os.environ[env_var])
        return path if path.is_file() else None
    for name in names:
        found = shutil.which(name)
        if found:
            return Path(found)
        for extra in EXTRA_PATHS:
            candidate = Path(extra) / name
            if candidate.is_file():
                return candidate
    return None
