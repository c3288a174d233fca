"""The lock files, every dependency pinned and hashed, and the check that they are current.

``python -m scripts.lock [UV ARGUMENTS]`` after an edit of pyproject.toml;
``python -m scripts.lock --upgrade`` (or ``--upgrade-package NAME``) to move pins;
``python -m scripts.lock --check`` (scripts/test runs it) to check, offline.

``requirements.lock`` pins what the gateway runs with: the Dockerfile and the
README's first command install it. ``requirements-dev.lock`` adds the dev and bench
extras, and scripts/test installs it. It is resolved first and the runtime lock is
resolved within it, so the two pin the same version of everything they share: the
tests test what ships. uv resolves for every platform (``--universal``) and keeps
the versions a file already pins where the requirements still allow them, so a
regeneration moves only what the edit of pyproject.toml asks for.

Each file carries a digest of the requirements it was resolved from. The check
recomputes it from pyproject.toml, so it fails when a requirement changed, and
never because PyPI has newer releases; it also checks that every pin satisfies its
requirement (a lock edited by hand) and that the two files agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent

#: Each lock file and the extras it holds, in the order they are resolved.
LOCKS: dict[str, tuple[str, ...]] = {
    "requirements-dev.lock": ("dev", "bench"),
    "requirements.lock": (),
}
#: The lock every other one is resolved within.
WIDEST = "requirements-dev.lock"

_DIGEST = re.compile(r"^# spec-sha256: ([0-9a-f]{64})\b", re.MULTILINE)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)


def spec_digest(project: dict[str, Any]) -> str:
    """A digest of what the locks are resolved from, blind to comments, order and layout.

    ``project`` is pyproject.toml's ``[project]`` table.
    """
    spec = {
        "requires-python": project.get("requires-python"),
        "locks": {
            name: sorted(str(requirement) for requirement in _wanted(project, extras))
            for name, extras in LOCKS.items()
        },
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _project(root: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return project


def _wanted(project: dict[str, Any], extras: Sequence[str]) -> list[Requirement]:
    """The requirements of the project's ``[project]`` table with ``extras``."""
    optional = project.get("optional-dependencies", {})
    lines = [*project["dependencies"], *(line for e in extras for line in optional.get(e, []))]
    return [Requirement(line) for line in lines]


def pins(text: str) -> dict[str, str]:
    """The version each package is pinned to, by canonical name."""
    return {canonicalize_name(name): version for name, version in _PIN.findall(text)}


def problems(root: Path = ROOT) -> list[str]:
    """What makes the locks under ``root`` stale or inconsistent; empty when current."""
    project = _project(root)
    digest = spec_digest(project)
    found: list[str] = []
    pinned: dict[str, dict[str, str]] = {}
    for name, extras in LOCKS.items():
        path = root / name
        if not path.exists():
            found.append(f"{name} is missing")
            continue
        text = path.read_text()
        recorded = _DIGEST.search(text)
        if recorded is None or recorded.group(1) != digest:
            found.append(f"{name} was not resolved from pyproject.toml's requirements as they are")
        pinned[name] = pins(text)
        found += _unsatisfied(name, pinned[name], _wanted(project, extras))
    widest = pinned.get(WIDEST, {})
    for name, versions in pinned.items():
        found += [
            f"{name} pins {package}=={version}, {WIDEST} {package}=={widest.get(package)}"
            for package, version in versions.items()
            if name != WIDEST and widest.get(package) != version
        ]
    return found


def _unsatisfied(name: str, pinned: dict[str, str], wanted: list[Requirement]) -> list[str]:
    """The requirements of ``wanted`` that the pins of lock ``name`` leave unmet."""
    found = []
    for requirement in wanted:
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            if requirement.marker is None:  # else it may be for other platforms only
                found.append(f"{name} does not pin {requirement}")
        elif not requirement.specifier.contains(version, prereleases=True):
            found.append(f"{name} pins {requirement.name}=={version}, outside {requirement}")
    return found


def lock(root: Path = ROOT, uv_arguments: Sequence[str] = ()) -> None:
    """Resolve every lock file again with uv, keeping the pins that still fit."""
    digest = spec_digest(_project(root))
    for name, extras in LOCKS.items():
        within = () if name == WIDEST else ("--constraint", WIDEST)
        command = [
            *("uv", "pip", "compile", "pyproject.toml", "--universal", "--generate-hashes"),
            *(f"--extra={extra}" for extra in extras),
            *within,
        ]
        subprocess.run(
            [sys.executable, "-m", *command, "--no-header", "--quiet", "-o", name, *uv_arguments],
            cwd=root,
            check=True,
        )
        path = root / name
        header = (
            f"# Pinned and hashed by `python -m scripts.lock`: {' '.join(command)}.\n"
            f"# Do not edit; scripts/test checks that pyproject.toml has not changed since.\n"
            f"# spec-sha256: {digest}\n"
        )
        path.write_text(header + path.read_text())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.lock",
        description="Resolve the lock files again; unknown arguments go to uv pip compile.",
    )
    parser.add_argument("--check", action="store_true", help="only check they are current")
    options, uv_arguments = parser.parse_known_args(argv)
    if not options.check:
        lock(ROOT, uv_arguments)
    found = problems(ROOT)
    for problem in found:
        print(f"scripts/lock: {problem}", file=sys.stderr)
    if found:
        print("scripts/lock: run `.venv/bin/python -m scripts.lock` and commit", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
