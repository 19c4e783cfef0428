"""Systolic `elementwise_ops`: maps and reductions on the PE array at stated MAC-equivalent cycles per operator."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from accel_sim.engines.roofline import bound_on
from accel_sim.mapper import best_cost
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank


def softmax_numerator(m: int = 16, p: int = 16) -> Workload:
    """S[m,p] = exp(X[m,p] - G[p]): one sub and one exp per point (FuseMax's SLN without the chunking)."""
    e = Einsum("S", Access("S", (R("m"), R("p"))),
               Call("exp", (Call("sub", (Access("X", (R("m"), R("p"))), Access("G", (R("p"),)))),)), {"m": m, "p": p})
    return Workload("sn", (Tensor("X", ("M", "P"), (m, p)), Tensor("G", ("P",), (p,)), Tensor("S", ("M", "P"), (m, p))),
                    (e,))


def arch(elementwise_ops: dict | None = None) -> Arch:
    """1 GHz, a 4 x 4 array, DRAM and SRAM fast enough that compute bounds a 16 x 16 map."""
    array = {"name": "pe_2d", "kind": "systolic", "rows": 4, "cols": 4, "operand_bits": 16}
    if elementwise_ops is not None:
        array["elementwise_ops"] = elementwise_ops
    return Arch.model_validate({
        "name": "t", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1000 GB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "sram", "technology": "SRAM",
                    "capacity": "1 MiB", "bandwidth": "1000 GB/s", "read_energy_per_bit": "1 pJ"}],
        "engines": [array]})


def test_default_array_runs_only_contractions() -> None:
    """Without `elementwise_ops` a map einsum cannot run on the array (peak 0), as before the option existed."""
    w = softmax_numerator()
    assert arch().engines[0].peak_per_cycle(w.einsums[0]) == 0.0


def test_exp_costs_its_mac_equivalents_per_pe() -> None:
    """exp = 6 and sub = 1 MAC-equivalents (FuseMax artifact proposal.py: SLN = mac 6 + add 1): 16 x 16 points x 7
    cycles / 16 PEs = 112 compute cycles; traffic (3 x 512 B at 1000 B/cycle) is far below."""
    a = arch({"exp": 6, "sub": 1})
    w = softmax_numerator()
    cost = best_cost(a.engines[0], w.einsums[0], w, a).cost
    assert cost.compute_cycles == pytest.approx(112)
    assert cost.total_cycles == pytest.approx(112)


def test_roofline_of_the_array_matches_its_rate() -> None:
    """The roofline's compute bound (ops / peak_per_cycle) equals the weighted cycles: 512 ops / (16 x 512 / 1792)."""
    a = arch({"exp": 6, "sub": 1})
    w = softmax_numerator()
    assert bound_on(w.einsums[0], w, a, "pe_2d").compute_cycles == pytest.approx(112)


def test_an_operator_the_pes_lack_keeps_the_einsum_off_the_array() -> None:
    """exp listed but sub not: the einsum needs both, so the array cannot run it."""
    w = softmax_numerator()
    assert arch({"exp": 6}).engines[0].peak_per_cycle(w.einsums[0]) == 0.0


def test_reduction_counts_its_combining_operator() -> None:
    """A sum over m uses 'add' per point: 16 x 16 points x 1 / 16 PEs = 16 cycles."""
    e = Einsum("D", Access("D", (R("p"),)), Access("X", (R("m"), R("p"))), {"m": 16, "p": 16})
    w = Workload("sd", (Tensor("X", ("M", "P"), (16, 16)), Tensor("D", ("P",), (16,))), (e,))
    a = arch({"add": 1})
    assert a.engines[0].cost(e, w, a).compute_cycles == pytest.approx(16)


def test_unknown_operator_is_rejected_with_a_fix() -> None:
    """A key that is no einsum operator is a config error that lists the valid ones."""
    with pytest.raises(ValidationError, match="unknown operator.*Fix"):
        arch({"expo": 6})
