"""The Dockerfile, compose file and Kubernetes manifests agree with the code they ship.

There is no container engine or cluster here: the files are checked for what a
mistake in them would break (a probe on a route that does not exist, an
environment variable the settings never read, a Service that selects no pod,
RBAC that forgets a verb the gateway needs).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tomllib
from collections.abc import Iterator, Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from gateway.cli import build_cache
from gateway.domain.flavors import load_catalog
from gateway.http import server
from gateway.http.capacity_metrics import FAMILIES, CapacityExposition
from gateway.logs import FORMATS
from gateway.settings import Settings, add_arguments, from_arguments
from gateway.store.store import Store
from tests import fleet
from tests.support import serve

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
NAMESPACE = "hypervisor-gateway"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def kustomization_resources(directory: Path) -> Iterator[dict[str, Any]]:
    """The objects a kustomization puts together, following directories it includes."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    for entry in kustomization["resources"]:
        target = directory / entry
        if target.is_dir():
            yield from kustomization_resources(target)
        else:
            yield from documents(target)


def objects(directory: Path = BASE) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in kustomization_resources(directory)}


def deployment() -> dict[str, Any]:
    return objects()[("Deployment", "hypervisor-gateway")]


def container() -> dict[str, Any]:
    (only,) = deployment()["spec"]["template"]["spec"]["containers"]
    return only


class Recording(Mapping[str, str]):
    """An environment that remembers which variables were looked up."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return self.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def settings_from(environment: Mapping[str, str]) -> Settings:
    """The settings an environment gives; fails for a variable no setting reads."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    recording = Recording(environment)
    settings = from_arguments(parser.parse_args([]), recording)
    unread = set(environment) - recording.asked
    assert not unread, f"no setting reads {sorted(unread)}"
    assert settings.log_format in FORMATS
    build_cache(settings)  # raises for a cache the gateway cannot build
    return settings


def test_every_kustomization_resource_exists() -> None:
    kustomizations = sorted(DEPLOY.rglob("kustomization.yaml"))
    assert {k.parent for k in kustomizations} >= {BASE, DEPLOY / "monitoring"}
    for kustomization in kustomizations:
        for entry in yaml.safe_load(kustomization.read_text())["resources"]:
            target = kustomization.parent / entry
            assert target.is_file() or (target / "kustomization.yaml").is_file(), target


def test_every_object_is_complete_and_namespaced_objects_land_in_one_namespace() -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for (kind, name), obj in objects(DEPLOY / "monitoring").items():
        assert obj["apiVersion"] and name, (kind, name)
        if kind != "Namespace":
            assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == NAMESPACE
        if kind not in cluster_scoped:
            # Set by the kustomization, or (the optional ServiceMonitor) by itself.
            assert obj["metadata"].get("namespace", NAMESPACE) == NAMESPACE
    assert yaml.safe_load((BASE / "kustomization.yaml").read_text())["namespace"] == NAMESPACE


def monitors() -> list[dict[str, Any]]:
    return [
        o for (kind, _), o in objects(DEPLOY / "monitoring").items() if kind == "ServiceMonitor"
    ]


async def test_probes_and_scrapes_point_to_routes_that_answer() -> None:
    paths = {
        container()["livenessProbe"]["httpGet"]["path"],
        container()["readinessProbe"]["httpGet"]["path"],
        *(e["path"] for monitor in monitors() for e in monitor["spec"]["endpoints"]),
    }
    assert paths == {"/healthz", "/readyz", "/metrics", "/metrics/capacity"}
    async with serve(fleet.objects()) as (client, _):
        for path in paths:
            assert (await client.get(path)).status_code == 200, path


def test_ports_line_up_from_service_to_container_to_settings() -> None:
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container()[probe]["httpGet"]["port"] in ports
    service = objects()[("Service", NAMESPACE)]
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= set(ports)
    assert {e["port"] for monitor in monitors() for e in monitor["spec"]["endpoints"]} <= {
        p["name"] for p in service["spec"]["ports"]
    }
    env = {e["name"]: e["value"] for e in container()["env"]}
    assert settings_from(env).port in ports.values()


def test_selectors_select_the_pods() -> None:
    pod_labels = deployment()["spec"]["template"]["metadata"]["labels"]
    service = objects()[("Service", NAMESPACE)]
    budget = objects()[("PodDisruptionBudget", NAMESPACE)]
    for selector in (
        service["spec"]["selector"],
        deployment()["spec"]["selector"]["matchLabels"],
        budget["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= pod_labels.items()
    for monitor in monitors():
        selector = monitor["spec"]["selector"]["matchLabels"]
        assert selector.items() <= service["metadata"]["labels"].items()


def test_the_pod_runs_locked_down_with_resources() -> None:
    spec = deployment()["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    security = container()["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m["name"] for m in container()["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]  # the only writable place
    resources = container()["resources"]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
    grace = server.config(None, host="0.0.0.0", port=8080).timeout_graceful_shutdown
    assert grace is not None
    assert spec["terminationGracePeriodSeconds"] > grace + 5  # preStop pause included


def test_the_deployment_is_configured_only_by_real_settings() -> None:
    env = {e["name"]: e["value"] for e in container()["env"]}
    settings = settings_from(env)
    assert settings.host == "0.0.0.0"
    assert settings.log_format == "json"
    assert "args" not in container() and "command" not in container()


def _rules(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_grants_the_gateway_what_it_needs_and_no_more() -> None:
    role = objects()[("ClusterRole", NAMESPACE)]
    read = {
        ("kvm.cloud.sap", resource, verb)
        for resource in ("hypervisors", "evictions")
        for verb in ("get", "list", "watch")
    }
    reviews = {
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
    assert _rules(role) == read | reviews
    assert _rules(objects()[("ClusterRole", "hypervisor-reader")]) == read
    binding = objects()[("ClusterRoleBinding", NAMESPACE)]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": NAMESPACE,
    }
    account = deployment()["spec"]["template"]["spec"]["serviceAccountName"]
    assert ("ServiceAccount", account) in objects()
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    ]


def test_the_capacity_scrape_sends_a_token_the_reader_role_lets_in() -> None:
    """Under --auth kubernetes /metrics/capacity is checked as GraphQL is; /metrics is open."""
    monitoring = objects(DEPLOY / "monitoring")
    (capacity,) = (
        e for m in monitors() for e in m["spec"]["endpoints"] if e["path"] == "/metrics/capacity"
    )
    assert capacity["authorization"]["type"] == "Bearer"
    credentials = capacity["authorization"]["credentials"]
    secret = monitoring[("Secret", credentials["name"])]
    assert secret["type"] == "kubernetes.io/service-account-token" and credentials["key"] == "token"
    account = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert ("ServiceAccount", account) in monitoring
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    bound = [
        o["roleRef"]["name"]
        for (kind, _), o in monitoring.items()
        if kind == "ClusterRoleBinding" and subject in o["subjects"]
    ]
    assert bound == ["hypervisor-reader"]  # list hypervisors: what the review asks
    (operational,) = (
        e for m in monitors() for e in m["spec"]["endpoints"] if e["path"] == "/metrics"
    )
    assert "authorization" not in operational


@pytest.mark.cluster
@pytest.mark.parametrize("directory", ["base", "monitoring"])
def test_kustomize_renders(directory: str, kubectl: Path) -> None:
    rendered = subprocess.run(
        [str(kubectl), "kustomize", str(DEPLOY / directory)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    kinds = [d["kind"] for d in yaml.safe_load_all(rendered)]
    kustomization = yaml.safe_load((DEPLOY / directory / "kustomization.yaml").read_text())
    generated = len(kustomization.get("configMapGenerator", []))
    assert len(kinds) == len(list(kustomization_resources(DEPLOY / directory))) + generated
    assert "ServiceMonitor" in kinds if directory == "monitoring" else "ServiceMonitor" not in kinds


def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return compose


def test_compose_runs_the_demo_with_a_shared_redis_cache() -> None:
    services = _compose()["services"]
    gateway, redis = services["gateway"], services["redis"]
    settings = settings_from(gateway["environment"])
    assert settings.demo and settings.host == "0.0.0.0"
    assert settings.cache == "redis"
    assert settings.redis_url is not None
    host = re.match(r"redis://([^:/]+)", settings.redis_url)
    assert host is not None and host.group(1) in services
    assert gateway["ports"] == [f"{settings.port}:{settings.port}"]
    assert gateway["depends_on"] == {"redis": {"condition": "service_healthy"}}
    assert "healthcheck" in redis
    assert gateway["build"] == "."
    assert gateway["read_only"] is True and gateway["tmpfs"] == ["/tmp"]


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments), continuation lines joined, comments left out."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_dockerfile_builds_a_small_non_root_image() -> None:
    steps = _dockerfile()
    bases = [args for kind, args in steps if kind == "FROM"]
    assert [b.split()[0] for b in bases] == ["python:3.11-slim", "python:3.11-slim"]
    final = steps[max(i for i, (kind, _) in enumerate(steps) if kind == "FROM") :]
    (user,) = [args for kind, args in final if kind == "USER"]
    uid = int(user.split(":")[0])
    assert uid != 0
    assert uid == deployment()["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    env = " ".join(args for kind, args in final if kind == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    (exposed,) = [args for kind, args in final if kind == "EXPOSE"]
    assert f"GATEWAY_PORT={exposed}" in env
    (entrypoint,) = [args for kind, args in final if kind == "ENTRYPOINT"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert yaml.safe_load(entrypoint) == [next(iter(scripts)), "serve"]


def test_dockerignore_keeps_what_the_build_copies() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        source
        for kind, args in _dockerfile()
        if kind == "COPY" and "--from" not in args
        for source in args.split()[:-1]
    ]
    assert copied
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not any(fnmatch(source, pattern) for pattern in ignored), source
    assert ".git" in ignored and "tests" in ignored


# The alerts and the dashboard on the capacity series.

MONITORING = DEPLOY / "monitoring"
PROMTOOL = Path("/usr/bin/promtool")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^}]*\}")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGES = re.compile(r"\[[^\]]*\]")
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_:][\w:]*")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expression: str) -> set[str]:
    """The series a PromQL expression selects: identifiers that are not a function,
    an aggregation, a keyword, a label (in matchers or by/on lists) or a string."""
    text = _STRINGS.sub('""', expression)
    for pattern in (_MATCHERS, _LABEL_LISTS, _RANGES):
        text = pattern.sub(" ", text)
    return {
        match.group()
        for match in _IDENTIFIER.finditer(text)
        if match.group().lower() not in _KEYWORDS
        and not text[match.end() :].lstrip().startswith("(")
    }


def test_metric_names_are_read_out_of_expressions() -> None:
    expression = (
        'sum by (zone, flavor) (max without (instance) (a_b{zone=~"x|y",flavor!="c"} offset 5m))'
        " < 1e3 or rate(c_total[5m]) > bool 2 or absent(d) unless on (name) e"
    )
    assert metric_names(expression) == {"a_b", "c_total", "d", "e"}


def rule_groups() -> list[dict[str, Any]]:
    (rule,) = (o for (kind, _), o in objects(MONITORING).items() if kind == "PrometheusRule")
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((MONITORING / "capacity-dashboard.json").read_text())
    return loaded


def dashboard_expressions() -> list[str]:
    return [t["expr"] for panel in dashboard()["panels"] for t in panel["targets"]]


def promtool_check_rules(groups: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", path], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.skipif(not PROMTOOL.exists(), reason="promtool (Debian's prometheus) not installed")
def test_every_expression_of_the_rules_and_the_dashboard_parses(tmp_path: Path) -> None:
    alerts = {r["alert"] for g in rule_groups() for r in g["rules"]}
    assert {
        "HypervisorZoneFlavorSlotsLow",
        "HypervisorFreeCapacityNegative",
        "HypervisorGatewayStale",
    } <= alerts
    promtool_check_rules(rule_groups(), tmp_path)
    # promtool checks expressions only in rule files: each one as a recording rule.
    recorded = [
        {"record": f"dashboard:expression_{i}", "expr": expression}
        for i, expression in enumerate(dashboard_expressions())
    ]
    assert len(recorded) >= 8
    promtool_check_rules([{"name": "dashboard", "rules": recorded}], tmp_path)
    with pytest.raises(AssertionError):  # the check does reject a broken expression
        promtool_check_rules(
            [{"name": "x", "rules": [{"record": "x:y", "expr": "sum("}]}], tmp_path
        )


def _input_series(exposition: str, replica: str) -> list[dict[str, str]]:
    """The exposition's samples as promtool's input series, one replica's, held for 30 minutes.

    Labels as Prometheus stores a scrape: an empty value is no label.
    """
    series = []
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if v} | {"pod": replica}
            text = ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
            series.append({"series": f"{sample.name}{{{text}}}", "values": f"{sample.value}x30"})
    return series


def _over_subscribed(name: str, resource: str, summary: str, description: str) -> dict[str, Any]:
    """The alert promtool should see for a host of zone qa-de-1b, building block bb02."""
    return {
        "exp_labels": {"severity": "warning", "name": name, "zone": "qa-de-1b"}
        | {"building_block": "bb02", "resource": resource},
        "exp_annotations": {"summary": f"{name} is over-subscribed in {resource} ({summary})"}
        | {"description": f"The host's best known free capacity is negative. {description}"},
    }


@pytest.mark.skipif(not PROMTOOL.exists(), reason="promtool (Debian's prometheus) not installed")
def test_the_over_subscription_alert_judges_the_best_known_figure(tmp_path: Path) -> None:
    """It fires for an untracked host (no free, only available), memory humanized."""
    untracked = fleet.objects()[3]  # node-d: bookings not tracked, capacity 128 cpus, 256Gi
    untracked["status"]["allocation"] = {"cpu": "132", "memory": "264Gi"}  # -4, -8Gi available
    store = Store()
    store.replace([*fleet.objects()[:3], untracked])
    exposition = CapacityExposition(store, load_catalog(None)).render().decode()
    assert 'hypervisor_gateway_hypervisor_free{name="node-d"' not in exposition
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
    alert = "HypervisorFreeCapacityNegative"
    bookings = "Placement has booked more than its schedulable capacity (capacity - booked < 0)."
    allocation = (
        "Its bookings are not tracked: libvirt runs more than its schedulable capacity"
        " (capacity - allocated < 0)."
    )
    test = {
        "interval": "1m",
        "input_series": _input_series(exposition, "a") + _input_series(exposition, "b"),
        "alert_rule_test": [
            {"eval_time": "14m", "alertname": alert, "exp_alerts": []},
            {
                "eval_time": "16m",
                "alertname": alert,
                "exp_alerts": [
                    _over_subscribed("node-b", "cpu", "-4 available", bookings),
                    _over_subscribed("node-d", "cpu", "-4 available", allocation),
                    _over_subscribed("node-d", "memory", "-8GiB available", allocation),
                ],
            },
        ],
    }
    (tmp_path / "test.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": [test]})
    )
    tested = subprocess.run(
        [PROMTOOL, "test", "rules", "test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


async def test_the_rules_and_the_dashboard_name_only_series_the_gateway_exports() -> None:
    async with serve(fleet.objects(), catalog=load_catalog(None)) as (client, _):
        texts = [(await client.get(path)).text for path in ("/metrics", "/metrics/capacity")]
    exported = {
        re.split(r"[{ ]", line, maxsplit=1)[0]
        for text in texts
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert set(FAMILIES) <= exported
    exported.add("up")  # Prometheus' own, per target
    expressions = [r["expr"] for g in rule_groups() for r in g["rules"]]
    expressions += dashboard_expressions()
    variables = [
        v["query"]["query"] for v in dashboard()["templating"]["list"] if v["type"] == "query"
    ]
    expressions += [re.sub(r"^label_values\((\w+),.*\)$", r"\1", v) for v in variables]
    for expression in expressions:
        names = metric_names(expression)
        assert names, expression
        assert names <= exported, (expression, names - exported)
    named = set().union(*map(metric_names, dashboard_expressions()))
    assert {
        "hypervisor_gateway_fleet_free",
        "hypervisor_gateway_fleet_booked",
        "hypervisor_gateway_fleet_overcommitted_hosts",
        "hypervisor_gateway_flavor_slots",
    } <= named
