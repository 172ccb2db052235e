"""Intel's SDE (open-p4studio) where a user has built and installed it: the
folder with bin/tofino-model and bin/bf_switchd, and the environment its
programs run in, as the SDE's run_tofino_model.sh and run_switchd.sh set it.

$SDE_INSTALL names the folder; without it, $SDE/install (p4studio's default).
bf_switchd serves P4Runtime only when the SDE was built with P4RT on, which
links PI's P4Runtime front end, lib/libpifeproto, into it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SDE_ENV, SDE_INSTALL_ENV = "SDE", "SDE_INSTALL"
P4RT_LIBRARY = "libpifeproto"          # PI's P4Runtime front end (bf_switchd's CMakeLists)
DEPENDENCIES = re.compile(r"^SDE_DEPENDENCIES=(.+)$", re.MULTILINE)  # share/environment


class SdeMissing(RuntimeError):
    """What of the SDE is missing, in one line."""


@dataclass(frozen=True)
class Sde:
    """An SDE install folder ($SDE_INSTALL)."""

    install: Path
    source: Path | None = None     # $SDE, when set

    @property
    def tofino_model(self) -> Path:
        return self.install / "bin" / "tofino-model"

    @property
    def bf_switchd(self) -> Path:
        return self.install / "bin" / "bf_switchd"

    def dependencies(self) -> Path | None:
        """The folder of the libraries p4studio built from source, as
        share/environment names it (relative to the install), if it does."""
        environment = self.install / "share" / "environment"
        found = DEPENDENCIES.search(environment.read_text()) if environment.is_file() else None
        return (self.install / found.group(1).strip()).resolve() if found else None

    def env(self, base: Mapping[str, str] = os.environ) -> dict[str, str]:
        """`base` with what the SDE's run scripts add: its bin/ first in PATH, its
        lib/ (and the dependencies' lib/) in LD_LIBRARY_PATH, $SDE and $SDE_INSTALL."""
        libs = [self.install / "lib"]
        dependencies = self.dependencies()
        if dependencies is not None:
            libs.append(dependencies / "lib")
        env = dict(base)
        env["PATH"] = os.pathsep.join(filter(None, [str(self.install / "bin"), base.get("PATH")]))
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            filter(None, [*map(str, libs), base.get("LD_LIBRARY_PATH")]))
        env[SDE_INSTALL_ENV] = str(self.install)
        if self.source is not None:
            env[SDE_ENV] = str(self.source)
        return env


def find_sde(environ: Mapping[str, str] = os.environ) -> Sde:
    """The SDE $SDE_INSTALL (or $SDE/install) names, with tofino-model and a
    bf_switchd that serves P4Runtime; SdeMissing says what is not there."""
    source = Path(environ[SDE_ENV]) if environ.get(SDE_ENV) else None
    if environ.get(SDE_INSTALL_ENV):
        install, named = Path(environ[SDE_INSTALL_ENV]), f"${SDE_INSTALL_ENV}"
    elif source is not None:
        install, named = source / "install", f"${SDE_ENV}/install"
    else:
        raise SdeMissing(f"${SDE_INSTALL_ENV} and ${SDE_ENV} are not set: point "
                         f"${SDE_INSTALL_ENV} at an open-p4studio install with bin/tofino-model "
                         "and bin/bf_switchd")
    sde = Sde(install, source)
    if not install.is_dir():
        raise SdeMissing(f"{named} ({install}) is not a folder")
    missing = [str(p) for p in (sde.tofino_model, sde.bf_switchd) if not os.access(p, os.X_OK)]
    if missing:
        raise SdeMissing(f"missing {' and '.join(missing)} (not installed, or not executable)")
    if not any((install / "lib").glob(f"{P4RT_LIBRARY}.*")):
        raise SdeMissing(f"{sde.bf_switchd} has no P4Runtime server (no "
                         f"{install / 'lib' / P4RT_LIBRARY}.so: build the SDE with P4RT on)")
    return sde
