"""A flavor's request as Nova builds it (domain brief, section 8; nova/scheduler/utils.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gateway.domain.demand import Demand, DemandError, flavor_demand, parse_cpu_spec

MiB = 2**20


def amounts(vcpus: int = 4, ram: int = 8192, **specs: str) -> dict[str, int]:
    demand = flavor_demand(vcpus, ram, {k.replace("__", ":"): v for k, v in specs.items()})
    return {name: int(amount) for name, amount in demand.resources}


def demand(**specs: str) -> Demand:
    return flavor_demand(4, 8192, specs)


def test_a_plain_flavor_asks_vcpu_and_memory() -> None:
    assert amounts() == {"cpu": 4, "memory": 8192 * MiB}


def test_dedicated_cpus_are_asked_as_pcpu() -> None:
    assert amounts(hw__cpu_policy="dedicated") == {"PCPU": 4, "memory": 8192 * MiB}
    assert amounts(hw__cpu_policy="shared") == {"cpu": 4, "memory": 8192 * MiB}


def test_emulator_threads_isolated_take_one_more_pcpu() -> None:
    assert amounts(hw__cpu_policy="dedicated", hw__emulator_threads_policy="isolate") == {
        "PCPU": 5,
        "memory": 8192 * MiB,
    }
    # Without pinning, the emulator policy asks for nothing.
    assert amounts(hw__emulator_threads_policy="isolate") == {"cpu": 4, "memory": 8192 * MiB}


@pytest.mark.parametrize(
    ("mask", "pinned"),
    [("0-1", 2), ("^0", 3), ("1,3", 2), ("0-3,^1-2", 2)],
)
def test_mixed_cpus_pin_the_masked_ones(mask: str, pinned: int) -> None:
    asked = amounts(hw__cpu_policy="mixed", hw__cpu_dedicated_mask=mask)
    assert asked == {"PCPU": pinned, "cpu": 4 - pinned, "memory": 8192 * MiB}


def test_mixed_with_isolated_emulator_threads() -> None:
    asked = amounts(
        hw__cpu_policy="mixed", hw__cpu_dedicated_mask="^0", hw__emulator_threads_policy="isolate"
    )
    assert asked == {"PCPU": 4, "cpu": 1, "memory": 8192 * MiB}


def test_mixed_realtime_mask_when_no_dedicated_mask() -> None:
    asked = amounts(hw__cpu_policy="mixed", hw__cpu_realtime="yes", hw__cpu_realtime_mask="^0-1")
    assert asked == {"PCPU": 2, "cpu": 2, "memory": 8192 * MiB}


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ({"hw:cpu_policy": "mixed"}, "needs hw:cpu_dedicated_mask"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-3"}, "some but not all"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "7"}, "some but not all"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "a"}, "cannot read 'a'"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "3-1"}, "empty range"),
        ({"hw:cpu_thread_policy": "never"}, "expected prefer, isolate or require"),
        ({"trait:A": "required", "trait:B": "forbidden", "trait:C": "maybe"}, "trait:C='maybe'"),
        ({"resources:VGPU": "-1"}, "expected a whole number >= 0"),
    ],
)
def test_specs_nova_refuses_are_refused(specs: dict[str, str], message: str) -> None:
    with pytest.raises(DemandError, match=message):
        flavor_demand(4, 8192, specs)


def test_thread_policy_asks_for_hyperthreading_or_not() -> None:
    assert demand(**{"hw:cpu_thread_policy": "isolate"}).forbidden == {"HW_CPU_HYPERTHREADING"}
    assert demand(**{"hw:cpu_thread_policy": "require"}).required == {"HW_CPU_HYPERTHREADING"}
    assert demand(**{"hw:cpu_thread_policy": "prefer"}) == demand()


def test_traits_and_aggregate_specs() -> None:
    asked = demand(
        **{
            "trait:CUSTOM_HANA_EXCLUSIVE_HOST": "required",
            "trait:COMPUTE_STATUS_DISABLED": "forbidden",
            "aggregate_instance_extra_specs:pinned": "true",
            "aggregate_instance_extra_specs:cpu_gen": ">= 3",
            "hw:mem_page_size": "large",  # not a scheduling request
        }
    )
    assert asked.required == {"CUSTOM_HANA_EXCLUSIVE_HOST"}
    assert asked.forbidden == {"COMPUTE_STATUS_DISABLED"}
    assert asked.aggregate_specs == (("cpu_gen", ">= 3"), ("pinned", "true"))
    assert asked.scheduled and asked.unjudged is None


def test_a_trait_both_required_and_forbidden_is_refused() -> None:
    # Nova keeps one value per key; two keys cannot name one trait, so only a
    # thread policy can clash with an explicit trait.
    with pytest.raises(DemandError, match="both required and forbidden: HW_CPU_HYPERTHREADING"):
        demand(**{"hw:cpu_thread_policy": "isolate", "trait:HW_CPU_HYPERTHREADING": "required"})


def test_explicit_vcpu_or_pcpu_replace_the_derived_cpus() -> None:
    assert amounts(resources__VCPU="2") == {"cpu": 2, "memory": 8192 * MiB}
    assert amounts(hw__cpu_policy="dedicated", resources__PCPU="4") == {
        "PCPU": 4,
        "memory": 8192 * MiB,
    }
    assert amounts(resources__MEMORY_MB="0", resources__VGPU="1") == {"VGPU": 1, "cpu": 4}


def test_granular_groups_are_kept_out_and_say_why() -> None:
    asked = demand(**{"resources1:VGPU": "1", "trait1:CUSTOM_GPU": "required"})
    assert asked.amounts == {"cpu": Decimal(4), "memory": Decimal(8192 * MiB)}
    assert asked.required == frozenset()
    assert asked.unjudged is not None
    assert "resources1:VGPU, trait1:CUSTOM_GPU" in asked.unjudged


def test_an_explicit_request_is_not_scheduled_by_traits() -> None:
    explicit = Demand.of_amounts({"memory": Decimal(MiB), "cpu": Decimal(1)})
    assert explicit.resources == (("cpu", Decimal(1)), ("memory", Decimal(MiB)))
    assert not explicit.scheduled


@pytest.mark.parametrize(
    ("spec", "cpus"),
    [("0-3", {0, 1, 2, 3}), ("0-5,^2-3", {0, 1, 4, 5}), (" 1 , 4 ,,", {1, 4}), ("^1", set())],
)
def test_cpu_specs(spec: str, cpus: set[int]) -> None:
    assert parse_cpu_spec(spec) == cpus
