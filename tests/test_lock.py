"""The lock files are current, and the check says so exactly when they are not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scripts.lock import LOCKS, ROOT, main, pins, problems


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """pyproject.toml and the lock files, as committed, to edit."""
    for name in ("pyproject.toml", *LOCKS):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_committed_locks_are_current() -> None:
    assert problems(ROOT) == []
    assert main(["--check"]) == 0


def test_both_locks_pin_every_runtime_dependency_with_hashes() -> None:
    for name in LOCKS:
        text = (ROOT / name).read_text()
        assert {"strawberry-graphql", "uvicorn", "aiocache"} <= pins(text).keys()
        assert text.count("==") <= text.count("--hash=sha256:")
    runtime = pins((ROOT / "requirements.lock").read_text())
    dev = pins((ROOT / "requirements-dev.lock").read_text())
    assert "pytest" in dev and "pytest" not in runtime


def test_a_changed_requirement_makes_every_lock_stale(copy: Path) -> None:
    _edit(copy / "pyproject.toml", '"starlette>=0.40"', '"starlette>=0.40,<2"')
    assert problems(copy) == [
        f"{name} was not resolved from pyproject.toml's requirements as they are" for name in LOCKS
    ]


def test_a_new_dev_requirement_makes_the_locks_stale_and_is_named(copy: Path) -> None:
    _edit(copy / "pyproject.toml", '    "pytest>=8",\n', '    "pytest>=8",\n    "tomli-w>=1",\n')
    found = problems(copy)
    assert "requirements-dev.lock does not pin tomli-w>=1" in found
    assert len([p for p in found if "was not resolved from" in p]) == len(LOCKS)


def test_comments_order_and_layout_do_not_make_a_lock_stale(copy: Path) -> None:
    pyproject = copy / "pyproject.toml"
    _edit(pyproject, '    "PyYAML>=6",\n', "")
    _edit(pyproject, '    "redis>=5",\n', '    # a comment\n    "redis >= 5",\n    "PyYAML>=6",\n')
    assert problems(copy) == []


def _repin(path: Path, package: str, version: str) -> str:
    """Pin ``package`` to ``version`` in the lock at ``path``; returns the old version."""
    old = pins(path.read_text())[package]
    _edit(path, f"\n{package}=={old} ", f"\n{package}=={version} ")
    return old


def test_a_pin_edited_by_hand_outside_its_requirement_is_found(copy: Path) -> None:
    for name in LOCKS:
        _repin(copy / name, "aiocache", "99.0")
    assert [p.split(", outside")[0] for p in problems(copy)] == [
        f"{name} pins aiocache==99.0" for name in LOCKS
    ]


def test_the_runtime_lock_pins_what_the_dev_lock_pins(copy: Path) -> None:
    tested = _repin(copy / "requirements.lock", "idna", "0.1")
    assert problems(copy) == [
        f"requirements.lock pins idna==0.1, requirements-dev.lock idna=={tested}"
    ]


def test_a_missing_lock_is_named(copy: Path) -> None:
    (copy / "requirements.lock").unlink()
    assert problems(copy) == ["requirements.lock is missing"]
