"""The mapper is engine-agnostic: a toy engine defined here, with one real choice, is mapped by the same search.

The toy engine runs a GEMM Z[m,n] = A[m,k] * W[k,n] in row tiles of t rows of m (t a divisor of m). Each tile
pays SETUP cycles before its t * n * k / LANES MAC cycles, so larger tiles are faster; but its tile buffer
costs E_TILE * t joules per MAC on top of E_MAC, so larger tiles spend more energy; and a tile of t rows of A
must fit the buffer (t * k bytes <= BUFFER_BYTES). Latency wants the largest tile that fits, energy the
smallest, EDP one in between: a real choice whose optimum brute force over t finds by the formula below.
"""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pytest
from builders import gemm

from accel_sim.engines.base import EngineBase
from accel_sim.errors import InfeasibleError
from accel_sim.mapper import best_cost, search
from accel_sim.spec.arch import Arch
from accel_sim.spec.cost import Cost
from accel_sim.spec.mapping import MappingBatch, rank_names, tensor_names
from accel_sim.spec.mapspace import Candidates, MapperSpec, fitting_objective, joined_batch, mapping_key

SETUP, LANES, E_MAC, E_TILE, BUFFER_BYTES = 40.0, 16, 1e-12, 2e-14, 2048  # the buffer binds latency's tile


def _arch() -> Arch:
    return Arch.model_validate({
        "name": "toy", "clock": "1 GHz", "technology_nm": 45,
        "memory": [{"name": "dram", "technology": "DDR4", "bandwidth": "100 GB/s"},
                   {"name": "sram", "technology": "SRAM", "capacity": "1 MiB", "bandwidth": "1000 GB/s"}],
        "engines": [{"name": "vec", "kind": "vector", "lanes": 8}]})


def _cycles_energy(m: int, n: int, k: int, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The toy model's closed form: (cycles, joules) of row tiles of t rows."""
    macs = m * n * k
    return m / t * (SETUP + t * n * k / LANES), macs * (E_MAC + E_TILE * t)


@dataclass(frozen=True)
class ToyScores:
    """Scores of a batch of tile choices."""

    total_cycles: np.ndarray
    energy_j: np.ndarray
    fits: np.ndarray

    def __len__(self) -> int:
        return len(self.total_cycles)

    def objective(self, objective: str) -> np.ndarray:
        """Cycles, joules or their product; +inf where the tile does not fit."""
        return fitting_objective(self.total_cycles, self.energy_j, self.fits, objective)


@dataclass(frozen=True, eq=False)
class ToySpace:
    """One group; one choice (the tile's rows, an index into the divisors of m); one loop order per level."""

    einsum: object
    workload: object
    arch: Arch
    engine: ToyEngine
    groups: tuple[int, ...] = (0,)
    pinned: bool = False

    @property
    def settings(self) -> MapperSpec:
        return self.engine.mapper

    @property
    def tiles(self) -> np.ndarray:
        m = self.einsum.sizes["m"]
        return np.array([d for d in range(1, m + 1) if m % d == 0], dtype=np.int64)

    def key(self) -> tuple[tuple, tuple[str, ...]]:
        shape, names = self.workload.shape_key(self.einsum)
        return (shape, self.engine, mapping_key(self.arch)), names

    def candidates(self, group: int, choice: np.ndarray, order: np.ndarray) -> Candidates:
        ranks, levels = rank_names(self.einsum), tuple(lv.name for lv in self.arch.memory)
        b, m = len(choice), self.einsum.sizes["m"]
        temporal = np.ones((b, len(levels), len(ranks)), dtype=np.int64)
        t = self.tiles[choice[:, 0]]
        temporal[:, 0, ranks.index("m")] = m // t
        temporal[:, 1, ranks.index("m")] = t
        for r in ("n", "k"):
            temporal[:, 1, ranks.index(r)] = self.einsum.sizes[r]
        batch = MappingBatch(ranks, levels, ("lanes",), tensor_names(self.einsum), temporal,
                             np.tile(np.arange(len(ranks)), (b, len(levels), 1)), np.ones((b, 1, len(ranks)), np.int64),
                             np.zeros((b, len(levels), 3), bool), np.full(b, len(levels) - 1))
        return Candidates(batch, np.full(b, group, dtype=np.int64))

    def defaults(self) -> Candidates:
        return self.candidates(0, np.zeros((1, 1), np.int64), np.zeros((1, 2), np.int64))

    def label(self, group: int) -> str:
        return "row tiles"

    def size(self, group: int | None = None) -> int:
        return len(self.tiles)

    def enumerate(self, chunk: int) -> Iterator[Candidates]:
        yield self.candidates(0, np.arange(len(self.tiles))[:, None], np.zeros((len(self.tiles), 2), np.int64))

    def sample(self, rng: np.random.Generator, n: int) -> tuple[int, np.ndarray, np.ndarray]:
        return 0, rng.integers(0, len(self.tiles), (n, 1)), np.zeros((n, 2), np.int64)

    def locate(self, candidates: Candidates, i: int) -> np.ndarray | None:
        t = candidates.mappings.temporal[i, 1, rank_names(self.einsum).index("m")]
        return np.array([int(np.flatnonzero(self.tiles == t)[0])])

    def neighbours(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.tiles)
        return np.arange(n)[:, None], np.tile(order, (n, 1))

    def near(self, group: int, choice: np.ndarray) -> list[np.ndarray]:
        return [np.arange(max(choice[0] - 1, 0), min(choice[0] + 2, len(self.tiles)))]

    def pair_neighbours(self, group: int, choice: np.ndarray, order: np.ndarray,
                        subsets: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        return self.neighbours(group, choice, order)

    def pair_count(self, group: int, subsets: list[np.ndarray] | None = None) -> int:
        return len(self.tiles)

    def retiled(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.empty((0, 1), dtype=np.int64), np.empty((0, len(order)), dtype=np.int64)

    def batch_of(self, parts: Sequence[tuple[int, np.ndarray, np.ndarray]], lead: Candidates | None = None
                 ) -> Candidates:
        return joined_batch(self, parts, lead)

    def shared(self, shelf: MutableMapping[tuple, object]) -> ToySpace:
        return self

    def score(self, candidates: Candidates) -> ToyScores:
        s = self.einsum.sizes
        t = candidates.mappings.temporal[:, 1, rank_names(self.einsum).index("m")].astype(float)
        cycles, energy = _cycles_energy(s["m"], s["n"], s["k"], t)
        return ToyScores(cycles, energy, t * s["k"] <= BUFFER_BYTES)

    def cost_of(self, candidates: Candidates, scores: ToyScores, i: int) -> Cost:
        return Cost(macs=self.einsum.macs, compute_cycles=float(scores.total_cycles[i]),
                    energy_j={("toy", "compute"): float(scores.energy_j[i])})

    def layout(self, candidates: Candidates, i: int) -> tuple:
        return ()

    def mac_cycles(self) -> int:
        return 1

    def infeasible(self, searched: bool) -> InfeasibleError:
        return InfeasibleError(f"no tile of '{self.einsum.name}' fits {BUFFER_BYTES} bytes. Fix: a larger buffer")

    def bounds(self, candidates: Candidates, objective: str) -> None:
        return None

    def proxy(self, objective: str, time_limit_s: float, seed: int, reference: tuple[float, float],
              hints: dict[int, list[np.ndarray]]) -> None:
        return None


class ToyEngine(EngineBase):
    """An engine with one choice (the row tile), defined only in this test."""

    kind: Literal["toy"] = "toy"
    mapper: MapperSpec = MapperSpec(method="cpsat")

    def peak_per_cycle(self, einsum) -> float:
        return float(LANES)

    def cost(self, einsum, workload, arch) -> Cost:
        space = ToySpace(einsum, workload, arch, self)
        candidates = space.defaults()
        return space.cost_of(candidates, space.score(candidates), 0)

    def mapspace(self, einsum, workload, arch) -> ToySpace:
        return ToySpace(einsum, workload, arch, self)


@pytest.mark.parametrize("objective", ["latency", "energy", "edp"])
@pytest.mark.parametrize("method", ["exhaustive", "cpsat"])
def test_mapper_finds_the_brute_force_optimum_of_a_toy_engine(objective: str, method: str) -> None:
    """On a 96 x 64 x 32 GEMM the mapper's tile equals the brute-force optimum of the closed form over every
    divisor of m that fits the buffer (independent of the scorer: the formula evaluated per tile)."""
    m, n, k = 96, 64, 32
    w, arch, engine = gemm(m, n, k), _arch(), ToyEngine(name="toy")
    tiles = np.array([d for d in range(1, m + 1) if m % d == 0 and d * k <= BUFFER_BYTES], dtype=float)
    cycles, energy = _cycles_energy(m, n, k, tiles)
    value = {"latency": cycles, "energy": energy, "edp": cycles * energy}[objective]
    best_tile = int(tiles[np.argmin(value)])
    result = search(engine.mapspace(w.einsums[0], w, arch), objective, method, time_limit_s=0.2)
    assert result.mapping.factors("sram")["m"] == best_tile
    assert objective != "latency" or best_tile == tiles.max() < m   # the buffer, not the rank, bounds latency's tile
    assert result.score == pytest.approx(value.min(), rel=1e-12)


def test_edp_optimum_is_an_interior_tile() -> None:
    """The choice is real: EDP's optimum is neither the smallest nor the largest fitting tile."""
    w, arch, engine = gemm(96, 64, 32), _arch(), ToyEngine(name="toy")
    tile = search(engine.mapspace(w.einsums[0], w, arch), "edp", "exhaustive").mapping.factors("sram")["m"]
    assert 1 < tile < BUFFER_BYTES // 32


def test_best_cost_maps_the_toy_engine_with_its_own_settings() -> None:
    """The pipeline's entry point maps the toy engine (its `mapper:` settings say cpsat) and returns the mapping
    it costed; the default tile (1 row) costs more EDP than the mapped one."""
    w, arch, engine = gemm(96, 64, 32), _arch(), ToyEngine(name="toy")
    mapped = best_cost(engine, w.einsums[0], w, arch, "edp")
    default = engine.cost(w.einsums[0], w, arch)
    assert mapped.mapping is not None and mapped.mapping.factors("sram")["m"] > 1
    edp = lambda c: c.total_cycles * c.total_energy_j  # noqa: E731
    assert edp(mapped.cost) < edp(default)
