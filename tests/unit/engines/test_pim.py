"""PIM engine: bank and channel GEMV timing from the DRAM timing parameters, tFAW, refresh, cost contract."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from accel_sim.engines.pim import DramPower, DramTiming, PimEngine, gemv_shape, pim_energy_j
from accel_sim.engines.roofline import bound_on
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank


def hbm2_pim(**overrides) -> PimEngine:
    """The NeuPIMs/DRAMsim3 HBM2_8Gb_x128 device: 1 KiB rows, 64 B bursts, 16 banks, 16 multipliers."""
    return PimEngine(name="pim", kind="pim", memory="hbm", **overrides)


def gemv_arch(pim: PimEngine) -> Arch:
    """One HBM level (1 TB/s) holding everything, and the PIM engine in it."""
    return Arch(name="a", clock="1 GHz", technology_nm=28,
                memory=[{"name": "hbm", "bandwidth": "1024 GB/s", "technology": "HBM2"}], engines=[pim])


def gemv(n: int, k: int) -> Workload:
    """y[n] = W[n, k] * x[k], W a weight of FP16."""
    e = Einsum("gemv", Access("y", (R("n"),)),
               Call("mul", (Access("x", (R("k"),)), Access("W", (R("n"), R("k"))))), {"n": n, "k": k})
    return Workload("gemv", (Tensor("x", ("k",), (k,), 16), Tensor("W", ("n", "k"), (n, k), 16, "weight"),
                             Tensor("y", ("n",), (n,), 16)), (e,))


def test_geometry_follows_bus_width_burst_and_columns() -> None:
    """128-bit bus x BL4 = 64 B per column access; 64 columns x 16 B = 1 KiB rows (NeuPIMs dram_page_size 1024)."""
    pim = hbm2_pim()
    assert (pim.column_bytes, pim.row_bytes, pim.bursts_per_row, pim.banks) == (64, 1024, 16, 16)


def test_column_step_is_tccd_l_when_multipliers_keep_up() -> None:
    """A 64 B burst holds 32 FP16 values; 16 multipliers need 2 cycles = tCCD_L, so t_col = 2."""
    assert hbm2_pim().column_cycles() == 2
    assert hbm2_pim(multipliers_per_bank=8).column_cycles() == 4  # 32 values / 8 multipliers


def test_one_bank_gemv_of_one_row() -> None:
    """One 1 KiB row: ACT, tRCD 14, 16 bursts x 2 = 32 (> tRAS 34 - 14), PRE tRP 14, then CL 14: 74 cycles."""
    assert hbm2_pim().bank_gemv_cycles(1024) == 14 + 32 + 14 + 14


def test_one_bank_gemv_of_two_rows_and_a_half_row() -> None:
    """Rows run back to back: 2 full rows (60 each) + a half row (tRCD 14 + 8 x 2 = 30 < tRAS 34, so 34) + tRP + CL."""
    assert hbm2_pim().bank_gemv_cycles(2.5 * 1024) == 60 + 60 + 34 + 14 + 14


def test_tfaw_limits_gang_activations() -> None:
    """16 banks in gangs of 4 (one per bank group): each gang is 4 ACTs, so gangs are tFAW apart: 3 x 30 = 90."""
    assert hbm2_pim().activation_cycles() == 90
    assert hbm2_pim().activation_cycles(banks=4) == 0


def test_trrd_limits_gangs_when_tfaw_is_short() -> None:
    """With tFAW 8 < 4 x tRRD_S 16, four ACTs take 4 x tRRD_S = 16 per gang: 3 x 16 = 48."""
    assert hbm2_pim(timing=DramTiming(tFAW=8)).activation_cycles() == 48


def test_trrd_l_spaces_gangs_that_reopen_the_same_bank_groups() -> None:
    """Each gang opens a row in every bank group, so the next gang's ACT to bank group 0 waits tRRD_L after this
    one's: with tRRD_L 40 above tFAW 30 and 4 x tRRD_S 16, gangs are 40 apart, 3 x 40 = 120."""
    assert hbm2_pim(timing=DramTiming(tRRD_L=40)).activation_cycles() == 120


def test_channel_round_and_refresh() -> None:
    """16 KiB on one channel is one round (90 + 46 + 14 = 150); GWRITE 256 B + READRES 32 B over 32 B/cycle
    plus CL 14 = 23; refresh stretches both by tREFI / (tREFI - tRFC) = 3900 / 3640."""
    t = hbm2_pim().channel_gemv(16 * 1024, 256, 32)
    assert t.rows == 16
    assert t.compute_cycles == pytest.approx(150 * 3900 / 3640)
    assert t.io_cycles == pytest.approx((288 / 32 + 14) * 3900 / 3640)


def test_refresh_adds_trfc_over_trefi_minus_trfc() -> None:
    """Doubling tRFC from 260 to 520 changes the refresh stretch from 3900/3640 to 3900/3380."""
    base = hbm2_pim().channel_gemv(64 * 1024, 256, 32).compute_cycles
    more = hbm2_pim(timing=DramTiming(tRFC=520)).channel_gemv(64 * 1024, 256, 32).compute_cycles
    assert more / base == pytest.approx(3640 / 3380)


def test_partial_last_round_activates_fewer_banks() -> None:
    """17 rows: one full round (150) and a round with one bank (no gang wait: 0 + 46 + 14 = 60)."""
    t = hbm2_pim(timing=DramTiming(tRFC=1)).channel_gemv(17 * 1024, 0, 0)
    assert t.compute_cycles == pytest.approx((150 + 60) * 3900 / 3899)


def test_gemv_view_takes_the_weight_as_matrix() -> None:
    """y[n] = W[n,k] x[k]: one GEMV of an n x k matrix with one input vector."""
    s = gemv_shape(gemv(4096, 1024).einsums[0], gemv(4096, 1024))
    assert (s.count, s.vectors, s.n, s.k, s.matrix_tensor) == (1, 1, 4096, 1024, "W")


def test_cost_spreads_one_gemv_over_all_channels() -> None:
    """An 8 MiB matrix over 32 channels: 256 KiB = 256 rows = 16 rounds of 150 per channel (refresh on top)."""
    pim = hbm2_pim()
    w = gemv(4096, 1024)
    cost = pim.cost(w.einsums[0], w, gemv_arch(pim))
    assert cost.compute_cycles == pytest.approx(16 * 150 * 3900 / 3640)


def test_pim_gemv_beats_the_external_bus_but_not_its_roofline() -> None:
    """PIM reads W in the banks faster than the 1 TB/s bus could deliver it, yet never beats the in-bank roofline."""
    pim = hbm2_pim()
    w = gemv(4096, 4096)
    arch = gemv_arch(pim)
    cost = pim.cost(w.einsums[0], w, arch)
    bus_cycles = 4096 * 4096 * 2 / 1024e9 * 1e9
    assert cost.total_cycles < bus_cycles
    assert cost.total_cycles >= bound_on(w.einsums[0], w, arch, "pim").cycles


def test_energy_counts_one_activation_per_row_read() -> None:
    """ACT+PRE energy = VDD (IDD0 tRC - IDD3N tRAS - IDD2N tRP) = 1.2 (65*48 - 55*34 - 40*14) pJ = 828 pJ per row."""
    pim = hbm2_pim()
    w = gemv(1024, 512)  # 1 MiB = 1024 rows
    cost = pim.cost(w.einsums[0], w, gemv_arch(pim))
    assert cost.energy_j[("pim_dram", "activate")] == pytest.approx(1024 * 828e-12)


def test_only_contractions_run_in_the_banks() -> None:
    """An elementwise einsum has peak 0 on PIM; contractions have channels x banks x multipliers = 8192."""
    pim = hbm2_pim()
    assert pim.peak_per_cycle(gemv(8, 8).einsums[0]) == 8192
    exp = Einsum("e", Access("y", (R("n"),)), Call("exp", (Access("x", (R("n"),)),)), {"n": 8})
    assert pim.peak_per_cycle(exp) == 0.0


def test_area_grows_with_multipliers() -> None:
    """Doubling multipliers per bank roughly doubles the datapath area (adder tree grows with them)."""
    a16, a32 = hbm2_pim().area_mm2(28), hbm2_pim(multipliers_per_bank=32).area_mm2(28)
    assert 1.9 < a32 / a16 < 2.1 and math.isfinite(a16)


@pytest.mark.parametrize("trefi", [1, 259, 260])
def test_refresh_interval_must_outlast_the_refresh(trefi: int) -> None:
    """tREFI <= tRFC would give a refresh stretch tREFI / (tREFI - tRFC) that is infinite or negative."""
    with pytest.raises(ValidationError, match="tREFI"):
        DramTiming(tRFC=260, tREFI=trefi)
    assert hbm2_pim(timing=DramTiming(tRFC=260, tREFI=261)).refresh_factor() == 261


@pytest.mark.parametrize("field", ["vdd", "idd0", "idd2n", "idd3n", "idd4r"])
@pytest.mark.parametrize("value", [0, -5])
def test_supply_voltage_and_currents_are_positive(field: str, value: float) -> None:
    """A zero or negative VDD or IDD current priced DRAM actions at zero or negative energy."""
    with pytest.raises(ValidationError, match=field):
        DramPower(**{field: value})


def test_energies_follow_the_current_ordering_the_formulas_subtract() -> None:
    """Column reads cost VDD x (IDD4R - IDD3N) and ACT/PRE VDD x (IDD0 tRC - IDD3N tRAS - IDD2N tRP): both positive."""
    with pytest.raises(ValidationError, match="idd4r"):
        DramPower(idd3n=55, idd4r=55)
    with pytest.raises(ValidationError, match="idd0"):
        hbm2_pim(power=DramPower(idd0=40))   # 40 x 48 = 1920 < 55 x 34 + 40 x 14 = 2430
    energy = pim_energy_j(hbm2_pim(), rows_opened=1, bursts_read=1, macs=0, io_bits=0, node_nm=28)
    assert energy[("pim_dram", "activate")] > 0 and energy[("pim_dram", "column_read")] > 0


def test_background_energy_is_the_standby_current_of_the_busy_channels() -> None:
    """The 8 MiB GEMV over 32 channels: each computes 16 rounds of 150 cycles and moves the 2,048 B vector and its
    256 B of results over its 32 B-per-cycle bus in 72 + CL 14 cycles, both stretched by refresh (3,900 / 3,640),
    at 1 ns a cycle: 32 channels x 1.2 V x (55 mA x 2,400 + 40 mA x 86) x 3,900 / 3,640 ns = 5.572 nJ. Before, a
    run that kept the channels busy longer paid no more energy for it."""
    pim = hbm2_pim()
    w = gemv(4096, 1024)
    cost = pim.cost(w.einsums[0], w, gemv_arch(pim))
    expected = 32 * 1.2 * (55 * 2400 + 40 * 86) * 3900 / 3640 * 1e-3 * 1e-9
    assert cost.energy_j[("pim_dram", "background")] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("field", [f for f in DramTiming.model_fields if f != "tCCD_S"])
def test_every_timing_parameter_the_model_reads_moves_a_gemv(field: str) -> None:
    """Each DRAM timing parameter, raised well past the others (to 40 cycles above the largest of them, tREFI's
    interval kept longer than tRFC), changes a 4096 x 4096 GEMV's cost on the device: a parameter a config can set
    must move the answer. tCCD_S alone is not read (all-bank COMPs revisit the same banks: tCCD_L paces them)."""
    base = DramTiming()
    raised = {field: max(base.model_dump().values()) + 40}
    if field == "tRFC":
        raised["tREFI"] = raised[field] * 10   # refresh then takes a tenth of the time, not 260 / 3900
    pim, changed = hbm2_pim(), hbm2_pim(timing=DramTiming(**raised))
    work = gemv(4096, 4096)
    before = pim.cost(work.einsums[0], work, gemv_arch(pim))
    after = changed.cost(work.einsums[0], work, gemv_arch(changed))
    assert (after.total_cycles, after.total_energy_j) != (before.total_cycles, before.total_energy_j)


@pytest.mark.parametrize("field", list(DramPower.model_fields))
def test_every_power_parameter_moves_a_gemvs_energy(field: str) -> None:
    """Each supply or IDD current raised by 10 % changes the 4096 x 4096 GEMV's energy (TN-41-01's ACT/PRE and
    read energies read all five), and not its cycles."""
    base = DramPower()
    pim, changed = hbm2_pim(), hbm2_pim(power=DramPower(**{field: getattr(base, field) * 1.1}))
    work = gemv(4096, 4096)
    before = pim.cost(work.einsums[0], work, gemv_arch(pim))
    after = changed.cost(work.einsums[0], work, gemv_arch(changed))
    assert after.total_energy_j != pytest.approx(before.total_energy_j, rel=1e-9)
    assert after.total_cycles == before.total_cycles
