"""The file source: every format, directories, reloads, and broken files that keep their state."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.sources.demo.source import generate
from gateway.sources.files import FileSource, FileSourceError, load_objects
from gateway.store.store import Store
from tests import support
from tests.objects import eviction, reported
from tests.support import eventually


def hypervisor(name: str, cpu: int | str = 64) -> dict[str, Any]:
    """An object as a file holds it: no resourceVersion."""
    return reported(name, cpu, memory="512Gi")


def dump(path: Path, *documents: Any) -> Path:
    """Write ``path`` so the poller cannot miss it, even within one timestamp tick."""
    if path.suffix == ".json":
        text = json.dumps(documents[0] if len(documents) == 1 else list(documents))
    else:
        text = yaml.safe_dump_all(documents)
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    if before:
        os.utime(path, ns=(before + 10**9, before + 10**9))
    return path


def names(store: Store) -> list[str]:
    return sorted(store.snapshot.by_name)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Path], Any]]:
    """Start a FileSource on a path; returns (source, store) once the store is ready."""
    tasks: list[asyncio.Task[None]] = []

    async def start(path: Path) -> tuple[FileSource, Store]:
        source, store = FileSource(path, poll_interval=0.02), Store()
        source.check()
        tasks.append(asyncio.create_task(source.run(store)))
        await eventually(lambda: store.ready)
        return source, store

    yield start
    for task in tasks:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


# Formats


def test_single_object(tmp_path: Path) -> None:
    objects, skipped = load_objects(dump(tmp_path / "a.yaml", hypervisor("a")))
    assert [(where, obj["metadata"]["name"]) for where, obj in objects] == [
        (f"{tmp_path / 'a.yaml'}[0]", "a")
    ]
    assert skipped == {}


def test_multi_document_stream_with_empty_documents(tmp_path: Path) -> None:
    path = tmp_path / "stream.yml"
    path.write_text("---\n" + yaml.safe_dump_all([hypervisor("a"), hypervisor("b")]) + "---\n")
    objects, _ = load_objects(path)
    assert [obj["metadata"]["name"] for _, obj in objects] == ["a", "b"]


@pytest.mark.parametrize("kind", ["List", "HypervisorList"])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_lists_as_kubectl_prints_them(tmp_path: Path, kind: str, suffix: str) -> None:
    listing = {
        "apiVersion": "v1" if kind == "List" else "kvm.cloud.sap/v1",
        "kind": kind,
        "metadata": {"resourceVersion": ""},
        "items": [hypervisor("a"), hypervisor("b")],
    }
    objects, skipped = load_objects(dump(tmp_path / f"all{suffix}", listing))
    assert [obj["metadata"]["name"] for _, obj in objects] == ["a", "b"]
    assert skipped == {}


def test_typed_list_items_may_leave_their_kind_out(tmp_path: Path) -> None:
    bare = {"metadata": {"name": "a"}, "spec": {}}
    listing = {"apiVersion": "kvm.cloud.sap/v1", "kind": "HypervisorList", "items": [bare]}
    [(_, obj)] = load_objects(dump(tmp_path / "list.json", listing))[0]
    assert obj["kind"] == "Hypervisor" and obj["apiVersion"] == "kvm.cloud.sap/v1"
    plain = {"apiVersion": "v1", "kind": "List", "items": [bare]}
    assert load_objects(dump(tmp_path / "plain.json", plain))[0] == []


def test_json_object_and_bare_array(tmp_path: Path) -> None:
    one, _ = load_objects(dump(tmp_path / "one.json", hypervisor("a")))
    many, _ = load_objects(dump(tmp_path / "many.json", hypervisor("b"), hypervisor("c")))
    assert [o["metadata"]["name"] for _, o in one + many] == ["a", "b", "c"]


def test_timestamps_stay_strings_as_kubernetes_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(
        "kind: Hypervisor\nmetadata: {name: a, creationTimestamp: 2026-01-02T03:04:05Z}\n"
        "status:\n  conditions:\n"
        "  - {type: Ready, status: 'True', lastTransitionTime: 2026-01-02T03:04:05Z}\n"
    )
    [(_, obj)] = load_objects(path)[0]
    assert obj["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert obj["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"


def test_other_kinds_and_nameless_objects_are_skipped_with_reasons(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mixed.yaml"
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    foreign = {**hypervisor("f"), "apiVersion": "example.com/v1"}
    nameless = {**hypervisor("n"), "metadata": {"labels": {}}}
    dump(path, config_map, hypervisor("a"), "just text", foreign, nameless)
    with caplog.at_level(logging.WARNING, logger="gateway.sources.files"):
        objects, skipped = load_objects(path)
    assert [obj["metadata"]["name"] for _, obj in objects] == ["a"]
    assert skipped == {
        f"{path}[0]": "kind 'ConfigMap' is not Hypervisor or Eviction; skipped",
        f"{path}[2]": "expected an object, got str; skipped",
        f"{path}[3]": "apiVersion 'example.com/v1' is not in group kvm.cloud.sap; skipped",
        f"{path}[4]": "metadata.name is missing; skipped",
    }
    assert all(where in caplog.text for where in skipped)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bad.yaml", b"kind: Hypervisor\nmetadata: {name: [a\n"),
        ("bad.yaml", b"a: b\n  c: d\n"),
        ("bad.yaml", b"kind: \xff\xfe\x00"),
        ("bad.json", b'{"kind": "Hypervisor",'),
        ("bad.json", b"\xff\xfe{}"),
    ],
)
def test_unparseable_files_raise(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises((yaml.YAMLError, ValueError)):
        load_objects(path)


def test_demo_fleet_round_trips_through_files(tmp_path: Path) -> None:
    fleet = generate(30, seed=4)
    listing = {"apiVersion": "v1", "kind": "List", "items": fleet}
    from_yaml, _ = load_objects(dump(tmp_path / "fleet.yaml", listing))
    from_json, _ = load_objects(dump(tmp_path / "fleet.json", listing))
    assert [obj for _, obj in from_yaml] == fleet == [obj for _, obj in from_json]


# The source


def test_missing_path_is_a_clear_startup_error(tmp_path: Path) -> None:
    with pytest.raises(FileSourceError, match=r"^--from .*nope: no such file or directory$"):
        FileSource(tmp_path / "nope").check()
    (tmp_path / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FileSourceError, match="not a regular file or a directory"):
        FileSource(tmp_path / "fifo").check()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_path_is_a_startup_error(tmp_path: Path) -> None:
    path = dump(tmp_path / "a.yaml", hypervisor("a"))
    path.chmod(0)
    with pytest.raises(FileSourceError, match="permission denied"):
        FileSource(path).check()


async def test_directory_reads_matching_files_only(tmp_path: Path, serve: Any) -> None:
    dump(tmp_path / "a.yaml", hypervisor("a"))
    dump(tmp_path / "b.yml", hypervisor("b"))
    dump(tmp_path / "c.json", hypervisor("c"))
    dump(tmp_path / "notes.txt", hypervisor("txt"))
    dump(tmp_path / ".hidden.yaml", hypervisor("hidden"))
    (tmp_path / "..data").mkdir()  # a mounted ConfigMap's real files
    dump(tmp_path / "..data" / "a.yaml", hypervisor("twice"))
    (tmp_path / "sub").mkdir()
    dump(tmp_path / "sub" / "d.yaml", hypervisor("nested"))
    source, store = await serve(tmp_path)
    assert names(store) == ["a", "b", "c"]
    assert source.status.synced and source.status.error is None
    assert source.status.confirmed_at is not None


async def test_changes_are_reloaded_without_resource_versions(tmp_path: Path, serve: Any) -> None:
    path = dump(tmp_path / "a.yaml", hypervisor("a", cpu=64), hypervisor("b"))
    _, store = await serve(tmp_path)
    generation = store.snapshot.generation
    assert store.snapshot.by_name["a"].capacity["cpu"] == 64

    dump(path, hypervisor("a", cpu=128), hypervisor("b"))
    await eventually(lambda: store.snapshot.by_name["a"].capacity["cpu"] == 128)
    assert store.snapshot.generation == generation + 1

    dump(tmp_path / "c.json", hypervisor("c"))
    await eventually(lambda: names(store) == ["a", "b", "c"])

    (tmp_path / "c.json").unlink()
    await eventually(lambda: names(store) == ["a", "b"])


async def test_an_edit_counts_even_where_a_copied_resource_version_stays(
    tmp_path: Path, serve: Any
) -> None:
    """``kubectl get -o yaml`` saves the resourceVersion, and an edit leaves it as it was."""
    saved = hypervisor("a", cpu=64)
    saved["metadata"].update(resourceVersion="4711", uid="uid-a", generation=3)
    path = dump(tmp_path / "a.yaml", saved)
    _, store = await serve(tmp_path)
    assert store.snapshot.by_name["a"].resource_version == "4711"

    saved["status"]["capacity"]["cpu"] = 128
    dump(path, saved)
    await eventually(lambda: store.snapshot.by_name["a"].capacity["cpu"] == 128)


def test_a_file_is_read_once_it_holds_still(tmp_path: Path) -> None:
    """A poll that catches a file being rewritten (truncated, then half written) skips it."""
    path = dump(tmp_path / "a.yaml", hypervisor("a"), hypervisor("b"))
    source, store = FileSource(tmp_path), Store()
    assert source.scan()  # the first scan reads at once
    source._publish(store)
    text = yaml.safe_dump_all([hypervisor("a", cpu=128), hypervisor("b")])
    for content in ("", text[: len(text) // 2], text):
        before = path.stat().st_mtime_ns
        path.write_text(content)
        os.utime(path, ns=(before + 10**9, before + 10**9))
        assert not source.scan()  # changed since the last poll: perhaps still being written
        assert names(store) == ["a", "b"]
    assert source.scan()  # the same as at the last poll: read
    source._publish(store)
    assert names(store) == ["a", "b"] and store.snapshot.by_name["a"].capacity["cpu"] == 128
    assert not source.scan()


async def test_unchanged_files_are_not_republished(tmp_path: Path, serve: Any) -> None:
    dump(tmp_path / "a.yaml", hypervisor("a"))
    source, store = await serve(tmp_path)
    generation, confirmed = store.snapshot.generation, source.status.confirmed_at
    assert confirmed is not None
    await eventually(lambda: (source.status.confirmed_at or 0) > confirmed)  # polled again
    assert store.snapshot.generation == generation


async def test_broken_file_keeps_its_last_good_objects(tmp_path: Path, serve: Any) -> None:
    path = dump(tmp_path / "a.yaml", hypervisor("a"), hypervisor("b"))
    dump(tmp_path / "other.yaml", hypervisor("c"))
    source, store = await serve(tmp_path)
    assert names(store) == ["a", "b", "c"]

    path.write_text("kind: Hypervisor\nmetadata: {name: [a\n")
    await eventually(lambda: source.status.error is not None)
    # The problem's wording is the YAML library's; where it is, is ours.
    assert source.status.error.startswith(f"{path}: invalid YAML at line 3, column 1: ")
    assert source.status.synced  # what it serves is still a complete view
    assert names(store) == ["a", "b", "c"]

    dump(tmp_path / "other.yaml", hypervisor("c"), hypervisor("d"))  # others still reload
    await eventually(lambda: names(store) == ["a", "b", "c", "d"])
    assert source.status.error is not None

    dump(path, hypervisor("a"))
    await eventually(lambda: source.status.error is None)
    assert names(store) == ["a", "c", "d"]
    assert source.status.synced


async def test_file_broken_from_the_start_is_reported(tmp_path: Path, serve: Any) -> None:
    (tmp_path / "bad.json").write_text('{"kind": "Hypervisor",')
    dump(tmp_path / "good.yaml", hypervisor("a"))
    source, store = await serve(tmp_path)
    assert names(store) == ["a"]
    expected = (
        "invalid JSON at line 1, column 23: Expecting property name enclosed in double quotes"
    )
    assert source.status.error == f"{tmp_path / 'bad.json'}: {expected}"
    assert not source.status.synced  # that file's objects are missing


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
async def test_unreadable_file_keeps_state_until_readable(tmp_path: Path, serve: Any) -> None:
    path = dump(tmp_path / "a.yaml", hypervisor("a"))
    source, store = await serve(tmp_path)
    path.chmod(0)
    await eventually(lambda: source.status.error == f"{path}: permission denied")
    assert names(store) == ["a"]
    path.chmod(0o644)
    await eventually(lambda: source.status.error is None)


async def test_skipped_objects_are_listed_as_rejected(tmp_path: Path, serve: Any) -> None:
    path = dump(
        tmp_path / "a.yaml", hypervisor("a"), {"kind": "ConfigMap", "metadata": {"name": "x"}}
    )
    source, store = await serve(tmp_path)
    assert names(store) == ["a"]
    assert store.rejected == {
        f"{path}[1]": "kind 'ConfigMap' is not Hypervisor or Eviction; skipped"
    }
    assert source.status.parse_failures == 1


async def test_duplicate_names_the_later_file_wins(
    tmp_path: Path, serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    dump(tmp_path / "1-old.yaml", hypervisor("a", cpu=64))
    dump(tmp_path / "2-new.yaml", hypervisor("a", cpu=96))
    with caplog.at_level(logging.WARNING, logger="gateway.sources.files"):
        _, store = await serve(tmp_path)
    assert store.snapshot.by_name["a"].capacity["cpu"] == 96
    assert store.rejected == {
        f"{tmp_path / '1-old.yaml'}[0]": (
            f"Hypervisor a is defined again in {tmp_path / '2-new.yaml'}[0], which wins"
        )
    }
    assert "Hypervisor a is in" in caplog.text
    double = f"metadata.name: also defined in {tmp_path / '1-old.yaml'}[0], which "
    assert store.snapshot.by_name["a"].warnings == (
        f"{double}{tmp_path / '2-new.yaml'}[0] overrides",
    )

    (tmp_path / "1-old.yaml").unlink()  # the winner's object is unchanged, its warning goes
    await eventually(lambda: store.snapshot.by_name["a"].warnings == ())
    assert store.rejected == {}


async def test_single_file_replaced_atomically(tmp_path: Path, serve: Any) -> None:
    path = dump(tmp_path / "fleet.yaml", hypervisor("a"))
    _, store = await serve(path)
    assert names(store) == ["a"]
    staged = dump(tmp_path / "fleet.yaml.tmp", hypervisor("a"), hypervisor("b"))
    os.replace(staged, path)
    await eventually(lambda: names(store) == ["a", "b"])


async def test_vanished_path_keeps_everything_and_says_so(tmp_path: Path, serve: Any) -> None:
    directory = tmp_path / "fleet"
    directory.mkdir()
    dump(directory / "a.yaml", hypervisor("a"))
    source, store = await serve(directory)
    moved = directory.rename(tmp_path / "elsewhere")
    await eventually(lambda: source.status.error is not None)
    assert (
        source.status.error
        == f"{directory}: no such file or directory; keeping the last objects read"
    )
    assert names(store) == ["a"]
    moved.rename(directory)
    await eventually(lambda: source.status.error is None)
    assert names(store) == ["a"]


async def test_configmap_volume_updates_are_seen_once(tmp_path: Path, serve: Any) -> None:
    """A mounted ConfigMap: visible symlinks into ``..data``, which is swapped atomically."""

    def publish(version: str, *objects: Any) -> None:
        real = tmp_path / f"..{version}"
        real.mkdir()
        dump(real / "fleet.yaml", *objects)
        (tmp_path / "..data.tmp").symlink_to(real.name)
        os.replace(tmp_path / "..data.tmp", tmp_path / "..data")

    publish("2026_01_01", hypervisor("a"))
    (tmp_path / "fleet.yaml").symlink_to("..data/fleet.yaml")
    source, store = await serve(tmp_path)
    assert names(store) == ["a"]
    assert source.status.error is None

    publish("2026_01_02", hypervisor("a"), hypervisor("b"))
    await eventually(lambda: names(store) == ["a", "b"])
    assert store.rejected == {}


async def test_absurd_nesting_is_a_file_error(tmp_path: Path, serve: Any) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    dump(tmp_path / "a.yaml", hypervisor("a"))
    source, store = await serve(tmp_path)
    assert names(store) == ["a"]
    assert source.status.error == f"{tmp_path / 'deep.json'}: nested too deeply"


def alias_bomb(levels: int) -> str:
    """An object whose spec holds 10 ** ``levels`` strings, written as aliases of aliases."""
    lines = ["kind: Hypervisor", "metadata: {name: bomb}", "spec:", "  junk:"]
    lines.append("    a0: &a0 [x, x, x, x, x, x, x, x, x, x]")
    for level in range(1, levels):
        lines.append(f"    a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 10)}]")
    lines.append(f"  customTraits: *a{levels - 1}")
    return "\n".join(lines) + "\n"


async def test_aliases_that_expand_beyond_reason_are_a_file_error(
    tmp_path: Path, serve: Any
) -> None:
    """825 bytes that hold 10^12 values once each alias is walked (the object's
    fingerprint, the parser): refused as they are read, the other files served."""
    (tmp_path / "bomb.yaml").write_text(alias_bomb(12))
    with pytest.raises(ValueError, match="aliases expand"):
        load_objects(tmp_path / "bomb.yaml")
    dump(tmp_path / "a.yaml", hypervisor("a"))
    source, store = await serve(tmp_path)
    assert names(store) == ["a"]
    limit = f"{1_000_000:,}"
    expected = f"{tmp_path / 'bomb.yaml'}: its aliases expand to more than {limit} values; refused"
    assert source.status.error == expected


def test_aliases_within_reason_are_read(tmp_path: Path) -> None:
    """An anchor shared by a few objects (labels, say) is YAML as any other."""
    path = tmp_path / "shared.yaml"
    path.write_text(
        "- {kind: Hypervisor, metadata: {name: a, labels: &labels {zone: z1}}}\n"
        "- {kind: Hypervisor, metadata: {name: b, labels: *labels}}\n"
    )
    objects, skipped = load_objects(path)
    assert [obj["metadata"]["labels"] for _, obj in objects] == [{"zone": "z1"}] * 2
    assert skipped == {}
    (tmp_path / "bomb.yaml").write_text(alias_bomb(5))  # 100,000 values: within reason
    ((_, bomb),) = load_objects(tmp_path / "bomb.yaml")[0]
    assert len(bomb["spec"]["customTraits"]) == 10


def kubectl_list(*items: Any) -> str:
    """A List as ``kubectl get -o yaml`` writes it: its kind and metadata after the items."""
    return yaml.safe_dump(
        {"apiVersion": "v1", "items": list(items), "kind": "List", "metadata": {}}
    )


def rewrite(path: Path, content: str) -> None:
    before = path.stat().st_mtime_ns
    path.write_text(content)
    os.utime(path, ns=(before + 10**9, before + 10**9))


@pytest.mark.parametrize("cut", ["kind: List", "  metadata:\n    labels:", "    name: c"])
def test_a_list_cut_short_keeps_the_last_objects(tmp_path: Path, cut: str) -> None:
    """A writer that pauses longer than a poll: what it wrote so far still parses."""
    path = tmp_path / "fleet.yaml"
    path.write_text(kubectl_list(hypervisor("a"), hypervisor("b")))
    source, store = FileSource(tmp_path), Store()
    source.scan()
    source._publish(store)
    text = kubectl_list(hypervisor("a"), hypervisor("b"), hypervisor("c"))
    rewrite(path, text[: text.rindex(cut)])
    assert not source.scan()  # changing
    assert source.scan()  # held still: read, and found cut short
    source._publish(store)
    assert names(store) == ["a", "b"]
    assert source.status.error == (
        f"{path}: a List without the kind that follows its items: cut short"
    )
    assert source.status.synced
    rewrite(path, text)
    source.scan(), source.scan()
    source._publish(store)
    assert names(store) == ["a", "b", "c"] and source.status.error is None


def test_an_emptied_file_keeps_its_last_objects(tmp_path: Path) -> None:
    """``kubectl get ... > file`` truncates first and writes once the answer arrives."""
    path = dump(tmp_path / "fleet.yaml", hypervisor("a"))
    source, store = FileSource(path), Store()
    source.scan()
    source._publish(store)
    rewrite(path, "")
    source.scan(), source.scan()
    source._publish(store)
    assert names(store) == ["a"]
    assert source.status.error == f"{path}: empty: cut short, or still being written"


def test_a_file_empty_from_the_start_is_an_empty_fleet(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("")
    source, store = FileSource(tmp_path), Store()
    source.scan()
    source._publish(store)
    assert names(store) == [] and source.status.error is None and source.status.synced


async def test_file_replaced_by_an_empty_directory_keeps_everything(
    tmp_path: Path, serve: Any
) -> None:
    """What Docker mounts where the source of a bind mount is missing."""
    path = dump(tmp_path / "fleet.yaml", hypervisor("a"))
    source, store = await serve(path)
    path.unlink()
    path.mkdir()
    await eventually(lambda: source.status.error is not None)
    assert source.status.error == (
        f"{path}: a directory where the file was (a missing bind mount?); "
        "keeping the last objects read"
    )
    assert names(store) == ["a"] and source.status.synced
    path.rmdir()
    dump(path, hypervisor("a"), hypervisor("b"))
    await eventually(lambda: names(store) == ["a", "b"])
    assert source.status.error is None


async def test_a_bad_edit_keeps_the_replica_ready_and_says_so(tmp_path: Path) -> None:
    """One typo must not take every replica out of the Service: /readyz stays 200."""
    path = dump(tmp_path / "fleet.yaml", hypervisor("a"))
    source = FileSource(path, poll_interval=0.02)
    async with support.serve(source) as (client, _):
        await eventually(lambda: source.status.confirmed_at is not None)
        path.write_text("kind: Hypervisor\nmetadata: {name: [a\n")
        await eventually(lambda: source.status.error is not None)
        ready = await client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["ready"] is True
        assert ready.json()["error"].startswith(f"{path}: invalid YAML")
        answer = await client.post(
            "/graphql", json={"query": "{ syncStatus { synced error hypervisors } }"}
        )
        status = answer.json()["data"]["syncStatus"]
        assert status["synced"] is True and status["hypervisors"] == 1
        assert status["error"].startswith(f"{path}: invalid YAML")
        metrics = (await client.get("/metrics")).text
        assert "hypervisor_gateway_ready 1.0" in metrics
        assert "hypervisor_gateway_source_error 1.0" in metrics


# Evictions beside the Hypervisors


def evictions(store: Store) -> dict[str, str]:
    """The store's evictions: name -> state."""
    return {e.name: e.state.value for e in store.evictions.snapshot.ordered}


async def test_evictions_are_read_beside_the_hypervisors(tmp_path: Path, serve: Any) -> None:
    listing = {
        "apiVersion": "kvm.cloud.sap/v1",
        "kind": "EvictionList",
        "items": [{k: v for k, v in eviction("e-2", "b").items() if k != "kind"}],
    }
    dump(tmp_path / "a.yaml", hypervisor("a"), eviction("e-1", "a", state="Running"), listing)
    _, store = await serve(tmp_path)
    assert names(store) == ["a"]
    assert evictions(store) == {"e-1": "RUNNING", "e-2": "PENDING"}
    assert store.evictions.snapshot.unavailable is None
    assert store.rejected == {}


async def test_files_without_evictions_have_none_and_a_reload_changes_them(
    tmp_path: Path, serve: Any
) -> None:
    path = dump(tmp_path / "a.yaml", hypervisor("a"))
    _, store = await serve(tmp_path)
    assert evictions(store) == {} and store.evictions.snapshot.unavailable is None
    dump(path, hypervisor("a"), eviction("e-1", "a", state="Failed"))
    await eventually(lambda: evictions(store) == {"e-1": "FAILED"})
    hosts = store.snapshot
    dump(path, hypervisor("a"))
    await eventually(lambda: evictions(store) == {})
    assert store.snapshot is hosts  # the hosts did not change


async def test_a_hypervisor_and_an_eviction_may_share_a_name(tmp_path: Path, serve: Any) -> None:
    dump(tmp_path / "a.yaml", hypervisor("a"), eviction("a", "a"), eviction("a", "a", "again"))
    _, store = await serve(tmp_path)
    assert names(store) == ["a"] and list(evictions(store)) == ["a"]
    assert store.evictions.snapshot.by_name["a"].reason == "again"
    assert store.rejected == {
        f"{tmp_path / 'a.yaml'}[1]": f"Eviction a is defined again in {tmp_path / 'a.yaml'}[2], "
        "which wins"
    }
