"""Sweep specifications (`dse/*.yaml`): a base arch, workloads, axes, constraints, objectives and a strategy.

Axes are key paths into the arch (`engines.mxu.rows`, `engines[0].rows`, `memory.global_buffer.capacity`)
or, with a `workload.` prefix, into every workload recipe (`workload.batch`); the same paths as
`accel-sim run --set`. Each axis gives `values`, a `range`, a `log_range` or `tie` (the value of another
axis). A design is one choice per free axis; every design runs on every workload, and each (design,
workload) pair is one point of the store. The strategy lists the designs (grid, random) or searches for them
(nsga2, tpe: dse/search.py).
"""
from __future__ import annotations

import hashlib
import json
import math
import operator
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Iterable, Iterator, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from accel_sim.errors import ConfigError
from accel_sim.io.load import file_kind, load_arch, load_workload, resolve
from accel_sim.io.yaml import (YamlDoc, apply_overrides, config_error, format_key_path, load_yaml, validate,
                               with_overrides)
from accel_sim.spec.execution import with_execution_mapping

Scalar = Union[int, float, str, bool]
CONSTRAINT = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>|==|!=)\s*([-+0-9.eE]+)\s*$")
# An axis listing more values than this is a typo (a step of 1 where 64 was meant), refused before it is listed.
MAX_AXIS_VALUES = 1_000_000
# A sweep bigger than this needs an explicit `max_points` (accel-sim sweep --max-points N): a typo in a range
# (step 1 instead of 64) should not start a 10^12-point grid.
MAX_POINTS = 100_000
# Designs tried, spread over the grid, before a sweep whose designs do not build is an error (a grid corner may be
# invalid by value; an unknown key fails them all).
PROBE_DESIGNS = 8
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq, "!=": operator.ne}
# pydantic errors that say a value is of the wrong kind for its field, not out of its range: no design can use it,
# whatever the other axes hold, so the sweep is refused at load (a value out of range - rows 0 - is left to its
# points, recorded 'invalid': a grid corner may be invalid by value, and is kept in the table)
KIND_ERRORS = frozenset({"int_from_float", "literal_error", "enum", "union_tag_invalid", "union_tag_not_found"})
NUMBER_LIKE = re.compile(r"^\s*[-+]?(\d|\.\d)")  # a number, or a number and a unit ('24 MiB'), as text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Range(_Strict):
    """start, start + step, ... up to and including stop."""

    start: float
    stop: float
    step: float = Field(gt=0)


class LogRange(_Strict):
    """start, start * factor, ... up to and including stop; or `num` points spaced evenly in log."""

    start: float = Field(gt=0)
    stop: float = Field(gt=0)
    factor: float | None = Field(default=None, gt=1)
    num: int | None = Field(default=None, ge=2)

    @model_validator(mode="after")
    def _one_spacing(self) -> LogRange:
        if (self.factor is None) == (self.num is None):
            raise ValueError("a log_range needs exactly one of 'factor' or 'num'. "
                             "Fix: add 'factor: 2' (doubling) or 'num: 6' (six log-spaced points)")
        if self.stop < self.start:
            raise ValueError(f"stop {self.stop:g} is below start {self.start:g}. Fix: swap start and stop")
        return self


class Axis(_Strict):
    """One swept key path and its values."""

    path: str
    values: list[Scalar] | None = None
    range: Range | None = None
    log_range: LogRange | None = None
    tie: str | None = None
    scale: float | None = None  # with `tie`: the tied value is the source's number times this (its unit kept)
    unit: str | None = None

    @field_validator("path", "tie")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        """`engines[0].rows` and `engines.0.rows` name the same field; keep the dotted form."""
        if value is None:
            return value
        text = re.sub(r"\[(\w+)\]", r".\1", value.strip()).strip(".")
        if not text or " " in text or ".." in text:
            raise ValueError(f"'{value}' is not a key path. Fix: write it like engines.mxu.rows or engines[0].rows")
        return text

    @field_validator("values", mode="before")
    @classmethod
    def _scalars(cls, value: object) -> object:
        """A list or null among the values is named as such (pydantic's union error said 'a valid integer')."""
        if isinstance(value, list):
            for item in value:
                if item is None or isinstance(item, (list, dict)):
                    raise ValueError(f"{json.dumps(item)} is not an axis value. Fix: give numbers, strings or "
                                     "booleans, e.g. 'values: [64, 128]' or 'values: [8 MiB, 16 MiB]'")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Axis:
        given = [k for k in ("values", "range", "log_range", "tie") if getattr(self, k) is not None]
        if len(given) != 1:
            which = f"it has {', '.join(given)}" if given else "it has none"
            raise ValueError(f"an axis needs exactly one of values, range, log_range or tie ({which}). "
                             "Fix: keep one, e.g. 'values: [64, 128, 256]'")
        if self.values is not None and not self.values:
            raise ValueError("the value list is empty. Fix: list at least one value")
        if self.range is not None and not all(map(math.isfinite, (self.range.start, self.range.stop, self.range.step))):
            raise ValueError("a range needs finite start, stop and step. Fix: give numbers, e.g. {start: 64, stop: "
                             "256, step: 64}")
        count = self._count()
        if count > MAX_AXIS_VALUES:
            raise ValueError(f"the axis has {count:.3g} values, more than {MAX_AXIS_VALUES:,}. Fix: use a larger step "
                             "or factor (a log_range with num: N gives N points)")
        if self.scale is not None and (self.tie is None or not (math.isfinite(self.scale) and self.scale > 0)):
            raise ValueError("'scale' multiplies a tied axis's value by a finite factor above 0. Fix: give it with "
                             "'tie', e.g. {path: memory.acc.capacity, tie: memory.buf.capacity, scale: 0.25}")
        return self

    def _count(self) -> float:
        """How many values a range or log_range gives, before listing them (0 for other axes)."""
        if self.range is not None:
            return math.floor((self.range.stop - self.range.start) / self.range.step + 1e-9) + 1
        if self.log_range is not None and self.log_range.factor is not None:
            g = self.log_range
            return math.floor(math.log(g.stop / g.start) / math.log(g.factor) + 1e-9) + 1
        return self.log_range.num if self.log_range is not None and self.log_range.num else 0

    def choices(self) -> list[Scalar]:
        """The axis's values in order (empty for a tied axis)."""
        if self.values is not None:
            raw: list[Scalar] = list(self.values)
        elif self.range is not None:
            r = self.range
            count = int(math.floor((r.stop - r.start) / r.step + 1e-9)) + 1
            raw = [_tidy(r.start + i * r.step) for i in range(max(count, 0))]
        elif self.log_range is not None:
            g = self.log_range
            if g.factor is not None:
                count = int(math.floor(math.log(g.stop / g.start) / math.log(g.factor) + 1e-9)) + 1
                raw = [_tidy(g.start * g.factor ** i) for i in range(count)]
            else:
                assert g.num is not None  # guaranteed by LogRange._one_spacing
                step = math.log(g.stop / g.start) / (g.num - 1)
                raw = list(dict.fromkeys(_tidy(g.start * math.exp(step * i)) for i in range(g.num)))
        else:
            return []
        return [f"{v} {self.unit}" if self.unit else v for v in raw]


def scaled(value: Scalar, factor: float) -> Scalar | None:
    """`value` times `factor`: a number, or the number of a 'NUMBER UNIT' string with its unit kept; None if it is
    neither."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _tidy(value * factor)
    if isinstance(value, str):
        number, _, unit = value.strip().partition(" ")
        try:
            return f"{_tidy(float(number) * factor)} {unit}".strip()
        except ValueError:
            return None
    return None


def _tidy(x: float) -> int | float:
    """Whole numbers as ints (array sizes, batch sizes); others rounded to 6 significant digits."""
    rounded = round(x)
    if abs(x - rounded) <= 1e-9 * max(1.0, abs(x)):
        return int(rounded)
    return float(f"{x:.6g}")


class RandomStrategy(_Strict):
    """`n` distinct designs drawn uniformly from the grid with a seeded generator."""

    kind: Literal["random"]
    n: int = Field(gt=0)
    seed: int = 0


class GridStrategy(_Strict):
    """Every combination of the free axes."""

    kind: Literal["grid"]


class SearchStrategy(_Strict):
    """Multi-objective search over the axes with optuna (dse/search.py): `nsga2` (NSGA-II, one generation per
    batch) or `tpe` (multi-objective TPE); `n` distinct designs, asked `batch` at a time and told in order."""

    kind: Literal["nsga2", "tpe"]
    n: int = Field(gt=0)
    seed: int = 0
    batch: int = Field(default=10, gt=1)


Strategy = Annotated[Union[GridStrategy, RandomStrategy, SearchStrategy], Field(discriminator="kind")]


class SweepSpec(_Strict):
    """The YAML sweep spec, validated."""

    name: str
    description: str = ""
    arch: str
    workloads: list[str] = Field(min_length=1)
    objective: Literal["latency", "energy", "edp"] = "edp"
    axes: list[Axis] = Field(min_length=1)
    constraints: list[str] = []
    objectives: dict[str, Literal["min", "max"]] = Field(default_factory=lambda: {"latency_s": "min",
                                                                                  "energy_j": "min"})
    strategy: Strategy = GridStrategy(kind="grid")

    @field_validator("strategy", mode="before")
    @classmethod
    def _bare_strategy(cls, value: object) -> object:
        """`strategy: grid` is short for `strategy: {kind: grid}`."""
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("constraints")
    @classmethod
    def _constraints(cls, value: list[str]) -> list[str]:
        for i, text in enumerate(value):
            if not CONSTRAINT.match(text):
                raise ValueError(f"constraint {i} '{text}' is not 'METRIC OP NUMBER'. "
                                 "Fix: write it like 'area_mm2 <= 50' (operators <=, <, >=, >, ==, !=)")
        return value


@dataclass(frozen=True)
class Constraint:
    """`metric op bound`, judged on a point's metrics."""

    metric: str
    op: str
    bound: float

    def holds(self, metrics: dict[str, float]) -> bool:
        """Whether the point's metric satisfies the bound."""
        return OPERATORS[self.op](metrics[self.metric], self.bound)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


@dataclass(frozen=True)
class PointTask:
    """Everything a worker needs to evaluate one point; plain data, cheap to pickle."""

    point_id: int
    design_id: int
    arch: str
    arch_overrides: tuple[str, ...]
    workload: str
    workload_label: str
    workload_overrides: tuple[str, ...]
    objective: str
    constraints: tuple[Constraint, ...]
    params: tuple[tuple[str, Scalar], ...]


# axis paths that change only what the mapper's scorer reads, not its search key (spec.mapspace.mapping_key)
_SCORED_ONLY = re.compile(r"clock|memory\.[^.]+\.(bandwidth|read_bandwidth|write_bandwidth|read_energy_per_bit|"
                          r"write_energy_per_bit)")


@dataclass(frozen=True)
class Sweep:
    """A loaded sweep: the spec, where it came from, its axes split into free and tied, and its hash."""

    spec: SweepSpec
    file: str
    arch_path: str
    workload_paths: tuple[str, ...]
    free: tuple[tuple[str, tuple[Scalar, ...]], ...]
    tied: tuple[tuple[str, str, float], ...]  # (path, source path, scale)
    constraints: tuple[Constraint, ...]
    spec_hash: str
    lines: dict[str, int]

    @property
    def designs(self) -> int:
        """Number of designs in the full grid of the free axes."""
        return math.prod(len(values) for _, values in self.free)

    @property
    def points(self) -> int:
        """Number of points the strategy will evaluate (designs chosen x workloads)."""
        chosen = getattr(self.spec.strategy, "n", self.designs)
        return chosen * len(self.workload_paths)

    @property
    def neighbour_points(self) -> int:
        """Consecutive points that differ only in the grid's fastest axis (and the workload): its values x the
        workloads (a chunk of a multiple of it keeps them together: executors.aligned_chunk)."""
        fastest = len(self.free[-1][1]) if self.free else 1
        return fastest * len(self.workload_paths)

    @property
    def rescored_points(self) -> int:
        """Consecutive points whose designs differ only in what the mapper's scorer reads and its search key leaves
        out (the clock, a level's bandwidths and access energies: mapper/search.py), so that one task's mapping
        cache re-scores them instead of searching each: the trailing free axes of such paths (with the axes tied
        to them) x the workloads."""
        run = len(self.workload_paths)
        for path, values in reversed(self.free):
            paths = [path, *(tied for tied, source, _ in self.tied if source == path)]
            if not all(_SCORED_ONLY.fullmatch(p) for p in paths):
                break
            run *= len(values)
        return run

    @property
    def adaptive(self) -> bool:
        """True when the designs are chosen from earlier results (a search strategy), not listed up front."""
        return isinstance(self.spec.strategy, SearchStrategy)

    def design_ids(self) -> Iterator[int]:
        """Grid indices of the designs to evaluate, in evaluation order (lazy for grids; a search's come from
        dse/search.py as it goes)."""
        if self.adaptive:
            raise ValueError("a search strategy chooses its designs as it runs (accel_sim.dse.search)")
        if isinstance(self.spec.strategy, RandomStrategy):
            # random.sample over a range draws without building it: memory grows with n, not the grid
            yield from random.Random(self.spec.strategy.seed).sample(range(self.designs), self.spec.strategy.n)
        else:
            yield from range(self.designs)

    def design_indices(self, design_id: int) -> dict[str, int]:
        """Free axis path -> index of its value in one design (mixed-radix decode, last axis fastest)."""
        out: dict[str, int] = {}
        rest = design_id
        for path, values in reversed(self.free):
            rest, out[path] = divmod(rest, len(values))
        return {path: out[path] for path, _ in self.free}

    def design(self, design_id: int) -> dict[str, Scalar]:
        """Axis path -> value of one design (free axes in order, then the tied ones)."""
        indices = self.design_indices(design_id)
        ordered = {path: values[indices[path]] for path, values in self.free}
        for path, source, scale in self.tied:
            ordered[path] = ordered[source] if scale == 1 else scaled(ordered[source], scale)
        return ordered

    def design_index(self, indices: Mapping[str, int]) -> int:
        """The grid index of the design with value `indices[path]` on each free axis (the inverse of `design`)."""
        index = 0
        for path, values in self.free:
            index = index * len(values) + indices[path]
        return index

    def tasks(self, skip: set[int] = frozenset(), designs: Iterable[int] | None = None) -> Iterator[PointTask]:
        """The points of `designs` (default: the strategy's), lazily, leaving out the ids in `skip` (already in the
        store)."""
        n_work = len(self.workload_paths)
        for design_id in self.design_ids() if designs is None else designs:
            params = None
            for w, workload in enumerate(self.workload_paths):
                point_id = design_id * n_work + w
                if point_id in skip:
                    continue
                params = params or self.design(design_id)
                arch_set = tuple(f"{p}={_yaml_text(v)}" for p, v in params.items() if not p.startswith("workload."))
                work_set = tuple(f"{p.removeprefix('workload.')}={_yaml_text(v)}" for p, v in params.items()
                                 if p.startswith("workload."))
                yield PointTask(point_id, design_id, self.arch_path, arch_set, workload, self.spec.workloads[w],
                                work_set,
                                self.spec.objective, self.constraints, tuple(params.items()))

    def error_at(self, key_path: tuple[str | int, ...], problem: str, fix: str) -> ConfigError:
        """A ConfigError pointing at a key of the spec file."""
        return ConfigError(problem, file=self.file, line=self.lines.get(format_key_path(key_path)),
                           key_path=format_key_path(key_path), fix=fix)


def _yaml_text(value: Scalar) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)



def load_sweep(path: str | Path, max_points: int | None = MAX_POINTS) -> Sweep:
    """Read and check a sweep spec before any point runs: schema, axis paths against the base arch, ties, strategy
    size, at most `max_points` points (None: no bound), and one design built (arch and every workload loaded)."""

    path = Path(path)
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise ConfigError("a sweep spec must be a YAML mapping", file=path, line=1,
                          fix="start with 'name:', 'arch:', 'workloads:' and 'axes:'")
    other = next((kind for key, kind in (("einsums", "an einsum cascade"), ("zoo", "a workload recipe"),
                                          ("engines", "an architecture config"), ("memory", "an architecture config"))
                  if key in doc.data and "axes" not in doc.data), None)
    if other is not None:
        raise ConfigError(f"this is {other}, not a sweep spec", file=path, line=1,
                          fix="run it with `accel-sim run ARCH WORKLOAD`, or give `accel-sim sweep` a spec with "
                              "'arch:', 'workloads:' and 'axes:' (see dse/)")
    spec = validate(SweepSpec, doc)
    lines = {format_key_path(k): v for k, v in doc.lines.items()}

    def error(key_path: tuple[str | int, ...], problem: str, fix: str) -> ConfigError:
        return ConfigError(problem, file=str(path), line=doc.line_of(key_path),
                           key_path=format_key_path(key_path), fix=fix)

    arch_path = resolve(_relative(spec.arch, path), "arch")
    if not arch_path.exists() or file_kind(arch_path) != "arch":
        raise error(("arch",), f"'{spec.arch}' is not an architecture config",
                    "name a file in arch_configs/ (e.g. tpu_v1) or a path to an arch YAML")
    workload_paths = []
    for i, name in enumerate(spec.workloads):
        resolved = resolve(_relative(name, path), "workload")
        if not resolved.is_file():  # '' resolves to the working folder, which exists
            raise error(("workloads", i), f"workload '{name}' not found",
                        "name a file in workloads/ (e.g. resnet50) or give a path; `accel-sim list` shows them")
        workload_paths.append(str(resolved.resolve()))

    seen: dict[str, int] = {}
    free: list[tuple[str, tuple[Scalar, ...]]] = []
    tied: list[tuple[str, str, float]] = []
    base = load_yaml(arch_path)
    targets = _value_targets(base, workload_paths)
    samples: dict[str, list[tuple[tuple[str | int, ...], Scalar]]] = {}  # free axis -> the values checked
    for i, axis in enumerate(spec.axes):
        if axis.path in seen:
            raise error(("axes", i, "path"), f"axis '{axis.path}' is swept twice (also axes[{seen[axis.path]}])",
                        "merge the two value lists into one axis")
        seen[axis.path] = i
        if axis.tie is not None:
            if axis.tie not in seen or spec.axes[seen[axis.tie]].tie is not None:
                free_names = [a.path for a in spec.axes[:i] if a.tie is None]
                raise error(("axes", i, "tie"), f"tie '{axis.tie}' names no free axis listed above it",
                            f"tie to one of: {', '.join(free_names) or '(none yet: list the free axis first)'}")
            if axis.scale is not None and scaled(dict(free)[axis.tie][0], axis.scale) is None:
                raise error(("axes", i, "scale"), f"the values of '{axis.tie}' are not numbers (or a number and a "
                            "unit), so they cannot be scaled", "tie without 'scale', or give the axis its own values")
            tied.append((axis.path, axis.tie, 1.0 if axis.scale is None else axis.scale))
            factor = axis.scale
            _check_axis_values(axis.path, [(("axes", i, "tie"), v if factor is None else scaled(v, factor))
                                           for _, v in samples[axis.tie]], targets, error)
            continue
        values = tuple(axis.choices())
        if not values:
            raise error(("axes", i), "the axis has no values (its range is empty)", "check start, stop and step")
        free.append((axis.path, values))
        if not axis.path.startswith("workload."):
            try:  # a wrong path fails here with the valid names, not at every point of the sweep
                apply_overrides(with_execution_mapping(base.data), [f"{axis.path}={_yaml_text(values[0])}"],
                                str(arch_path))
            except ConfigError as exc:
                raise error(("axes", i, "path"), exc.problem, exc.fix) from None
        samples[axis.path] = _samples(axis, i, values)
        _check_axis_values(axis.path, samples[axis.path], targets, error)

    strategy = spec.strategy
    designs = math.prod(len(v) for _, v in free)
    if isinstance(strategy, (RandomStrategy, SearchStrategy)) and strategy.n > designs:
        raise error(("strategy", "n"), f"n = {strategy.n} is more than the {designs} designs in the grid",
                    f"lower n to at most {designs}, or use 'strategy: grid'")
    if isinstance(strategy, SearchStrategy):
        try:
            import optuna  # noqa: F401 - an optional extra (heavy): only its presence is checked here
        except ImportError:
            raise error(("strategy", "kind"), f"strategy '{strategy.kind}' needs optuna, which is not installed",
                        "pip install 'accel-sim[search]' (or optuna), or use 'strategy: grid' or random") from None
    constraints = tuple(Constraint(m.group(1), m.group(2), float(m.group(3)))
                        for m in (CONSTRAINT.match(c) for c in spec.constraints) if m)
    digest = hashlib.sha256(json.dumps(spec.model_dump(mode="json"), sort_keys=True).encode())
    for file in (arch_path, *workload_paths):  # a changed input makes old rows stale: resume must refuse
        digest.update(Path(file).read_bytes())
    sweep = Sweep(spec, str(path), str(arch_path.resolve()), tuple(workload_paths), tuple(free), tuple(tied),
                  constraints, digest.hexdigest(), lines)
    if max_points is not None and sweep.points > max_points:
        where = ("strategy", "n") if hasattr(strategy, "n") else ("axes",)
        raise error(where, f"the sweep has {sweep.points:,} points ({designs:,} designs in the grid x "
                    f"{len(workload_paths)} workloads), more than the {max_points:,} allowed",
                    "narrow the axes, sample them with strategy: {kind: random, n: ...}, or allow it explicitly "
                    f"(accel-sim sweep --max-points {sweep.points}; load_sweep(path, max_points=None))")
    _check_a_design_builds(sweep, error)
    _check_metrics_up_front(sweep)
    return sweep


def _value_targets(arch: YamlDoc, workload_paths: list[str]) -> list[tuple[bool, type[BaseModel], YamlDoc]]:
    """What an axis value is checked against, each valid as written: the base arch (its axes), and each workload
    recipe (`workload.` axes; a cascade's or an ONNX model's overrides are checked by the designs' build)."""
    from accel_sim.io.recipe import Recipe  # lazy: the zoo's parameter model
    from accel_sim.spec.arch import Arch

    out = []
    base = YamlDoc(with_execution_mapping(arch.data), arch.lines, arch.file)
    if _valid(Arch, base.data):
        out.append((False, Arch, base))
    for path in dict.fromkeys(workload_paths):
        if file_kind(path) == "recipe":
            doc = load_yaml(path)
            if _valid(Recipe, doc.data):
                out.append((True, Recipe, doc))
    return out


def _valid(model: type[BaseModel], data: object) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def _samples(axis: Axis, index: int, values: tuple[Scalar, ...]) -> list[tuple[tuple[str | int, ...], Scalar]]:
    """(key path in the spec, value) of the axis values to check for their kind: every listed value; of a range or
    log_range, whose values differ only in size, the first of each type (an int and a float when the step is
    fractional) - a million-value range is not validated a million times."""
    if axis.values is not None:
        return [(("axes", index, "values", j), v) for j, v in enumerate(values)]
    where = ("axes", index, "range" if axis.range is not None else "log_range")
    return [(where, v) for v in {type(v): v for v in reversed(values)}.values()]


def _check_axis_values(path: str, values: list[tuple[tuple[str | int, ...], Scalar | None]],
                       targets: list[tuple[bool, type[BaseModel], YamlDoc]], error: Callable[..., ConfigError]) -> None:
    """Each value applied alone to the base arch (or each recipe, for a `workload.` axis) and validated, without
    evaluating: a value of the wrong kind for its field (rows: banana, rows: 8.5, dataflow: xx, a capacity with no
    number) is a ConfigError at the axis, since every design holding it fails. Out-of-range values pass here."""
    workload_axis = path.startswith("workload.")
    checked: set[tuple[type, object]] = set()
    for where, value in values:
        if value is None or (type(value), value) in checked:
            continue
        checked.add((type(value), value))
        assignment = f"{path.removeprefix('workload.')}={_yaml_text(value)}"
        for is_workload, model, doc in targets:
            if is_workload != workload_axis:
                continue
            try:
                changed = with_overrides(doc, [assignment])
                model.model_validate(changed.data)
            except ConfigError:  # a path the base cannot take: the path check and the designs' build report it
                break
            except ValidationError as exc:
                if not any(_wrong_kind(e) for e in exc.errors()):
                    continue
                found = config_error(exc, changed, model)
                problem = found.problem.removeprefix(f"--set '{assignment}': ")
                raise error(where, f"axis '{path}' cannot take the value {json.dumps(value)}: {problem}",
                            f"{found.fix}; every design with this value would fail, so drop or correct it"
                            ) from None


def _wrong_kind(err: dict) -> bool:
    """Whether a pydantic error says the value is of the wrong kind (a word for a number, a fraction for a count,
    a name not among the choices), not out of range; value errors of the spec's own validators are judged by the
    value: a boolean, a list or a mapping, or text that does not start with a number."""
    kind, value = err["type"], err.get("input")
    if kind.endswith(("_type", "_parsing")) or kind in KIND_ERRORS:
        return True
    if kind != "value_error":
        return False
    return isinstance(value, (bool, list, dict)) or (isinstance(value, str) and not NUMBER_LIKE.match(value))


def _check_a_design_builds(sweep: Sweep, error: Callable[..., ConfigError]) -> None:
    """Some design's arch and workloads load with its values, or the sweep is an error before its first point: an
    unknown leaf (engines.mxu.rowz, workload.batchh) names the sweep file and its axis instead of making every
    point 'invalid'. A grid corner may be invalid by value, so PROBE_DESIGNS designs spread over the grid are
    tried; the first one's error is reported."""
    first: ConfigError | None = None
    for design_id in _probes(sweep):
        tasks = list(sweep.tasks(designs=[design_id]))
        try:
            load_arch(tasks[0].arch, tasks[0].arch_overrides)
            for task in tasks:
                load_workload(task.workload, overrides=task.workload_overrides)
            return
        except ConfigError as exc:
            first = first or exc
    assert first is not None  # a grid has at least one design (every free axis has values)
    for i, axis in enumerate(sweep.spec.axes):
        if f"--set '{axis.path}=" in first.problem:
            raise error(("axes", i, "path"), f"axis '{axis.path}' builds no design: {first.file}: {first.problem}",
                        first.fix) from None
    raise first


def _probes(sweep: Sweep) -> list[int]:
    """PROBE_DESIGNS design ids spread over the grid, the first and the last included."""
    n = sweep.designs
    tries = min(PROBE_DESIGNS, n)
    return list(dict.fromkeys(round(k * (n - 1) / max(tries - 1, 1)) for k in range(tries)))


def _check_metrics_up_front(sweep: Sweep) -> None:
    """The objectives and constraints name metrics that evaluate() reports (check_metric_names), before any point
    runs, so `accel-sim validate` refuses what `sweep` would. Metrics every summary holds need no evaluation; a
    name that depends on the arch (memory.<level>.peak_bytes, utilization.<engine>) is judged on the first probe
    point that evaluates. If none does, the sweep checks its first finished row (run_sweep)."""
    from accel_sim.evaluate import SUMMARY_METRICS  # lazy: the pipeline (numpy, the engines)

    if {*sweep.spec.objectives, *(c.metric for c in sweep.constraints)} <= SUMMARY_METRICS:
        return
    from accel_sim.dse.point import evaluate_point  # lazy: point.py imports this module

    for design_id in _probes(sweep):
        for task in sweep.tasks(designs=[design_id]):
            row = evaluate_point(task)
            if row.status in ("ok", "infeasible"):
                check_metric_names(sweep, row.metrics)
                return


def _relative(name: str, spec_file: Path) -> str:
    """A path written in a spec is relative to the spec's folder when that file exists, else as given."""
    candidate = spec_file.parent / name
    return str(candidate.resolve()) if candidate.exists() and not Path(name).is_absolute() else name


def check_metric_names(sweep: Sweep, metrics: dict[str, float]) -> None:
    """Objectives and constraints must name metrics that evaluate() reports; else a ConfigError listing them."""
    known = sorted(metrics)
    for metric in sweep.spec.objectives:
        if metric not in metrics:
            raise sweep.error_at(("objectives", metric), f"unknown metric '{metric}'",
                                 f"use one of: {', '.join(known)}")
    for i, constraint in enumerate(sweep.constraints):
        if constraint.metric not in metrics:
            raise sweep.error_at(("constraints", i), f"unknown metric '{constraint.metric}'",
                                 f"use one of: {', '.join(known)}")
