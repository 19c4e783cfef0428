"""The graph schedule as a CP-SAT model: decision variables, one function per constraint family, the solution types.

Every einsum gets an optional interval per engine that can run it (duration from the engine's model);
exactly one is chosen. Constraint families: assignment, precedence (a consumer waits for its producer, or
for a DRAM round trip when the tensor spills, or for one tile when the pair is fused), no-overlap per
engine, placement (each intermediate tensor is on chip, spilled or fused), capacity (cumulative bytes of
live on-chip tensors and the room running einsums' tiles need beside them), addresses (2-D no-overlap of
lifetime x address range) and required fusions. The objective is the makespan, the energy, or a weighted mix.
Each family is switched on by one assumption literal so that `schedule/explain.py` can name the families at fault
when the model is infeasible.
`schedule/cpsat.py` solves the model; `schedule/greedy.py` builds the list schedule that seeds it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Sequence

from ortools.sat.python import cp_model

from accel_sim.engines.systolic_cpsat import new_solver
from accel_sim.schedule.problem import Buffer, Problem

ScheduleObjective = Literal["latency", "energy", "mix"]
FAMILIES: tuple[str, ...] = ("precedence", "no_overlap", "placement", "capacity", "addresses", "fusion")
_ENERGY_SCALE = 1_000_000  # the energy term is scaled so the worst case spans about this many units
Placement = Literal["on_chip", "spill", "fused", "registers"]


def peak_live_bytes(lives: Sequence[tuple[float, float, float]]) -> float:
    """Most bytes live at once among (start, end, bytes) lives; one that ends as another starts does not overlap."""
    live = peak = 0.0
    for _, delta in sorted([(start, size) for start, _, size in lives] + [(end, -size) for _, end, size in lives]):
        live += delta
        peak = max(peak, live)
    return peak


@dataclass(frozen=True)
class Slot:
    """One einsum placed in time on one engine (arch cycles)."""

    einsum: str
    engine: str
    start: int
    end: int
    resident: tuple[str, ...] = ()   # tensors it keeps in the engine's registers (Problem.residencies)
    tail: int = 0                    # last cycles a successor with a tail may overlap (Option.tail_cycles)


@dataclass(frozen=True)
class BufferSlot:
    """Where an intermediate tensor lives and when: on chip (with an address), spilled, fused (two tiles), or in
    an engine's registers (tile by tile through the PEs: no buffer bytes)."""

    tensor: str
    placement: Placement
    start: int
    end: int
    bytes: int          # on-chip footprint: the whole tensor, two tiles when fused, 0 when spilled
    address: int | None = None


@dataclass(frozen=True)
class Schedule:
    """A solved schedule: slots, buffers, makespan, energy and the solver's bound and gap."""

    problem: Problem
    slots: tuple[Slot, ...]
    buffers: tuple[BufferSlot, ...]
    makespan_cycles: int
    energy_j: float
    status: str                     # OPTIMAL or FEASIBLE
    objective: str
    bound: float                    # the solver's lower bound on the objective value
    objective_value: float
    wall_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def gap(self) -> float:
        """Relative optimality gap of the objective: 0.0 when proven optimal."""
        if self.objective_value <= 0:
            return 0.0
        return max(0.0, (self.objective_value - self.bound) / self.objective_value)

    def slot(self, einsum: str) -> Slot:
        """The slot of `einsum`."""
        for s in self.slots:
            if s.einsum == einsum:
                return s
        raise KeyError(einsum)

    def peak_on_chip_bytes(self) -> int:
        """Largest total of on-chip bytes live at one time."""
        return int(peak_live_bytes([(b.start, b.end, b.bytes) for b in self.buffers]))


@dataclass
class ModelVars:
    """The model's variables, by task, option and buffer."""

    start: dict[str, cp_model.IntVar]
    end: dict[str, cp_model.IntVar]
    dur: dict[str, cp_model.IntVar]
    choose: dict[tuple[str, str], cp_model.IntVar]
    interval: dict[tuple[str, str], cp_model.IntervalVar]
    on: dict[str, cp_model.IntVar]
    spill: dict[str, cp_model.IntVar]
    fused: dict[str, cp_model.IntVar]
    life_end: dict[str, cp_model.IntVar]
    address: dict[tuple[str, str], cp_model.IntVar]
    enabled: dict[str, cp_model.IntVar]   # one assumption literal per constraint family
    horizon: int
    resident: dict[tuple[str, str], cp_model.IntVar] = field(default_factory=dict)   # (tensor, engine)
    variant: dict[tuple[str, str, frozenset], cp_model.IntVar] = field(default_factory=dict)  # (task, engine, set)
    makespan: cp_model.IntVar | None = None
    tail: dict[str, cp_model.IntVar] = field(default_factory=dict)   # pipeline tail of the chosen option
    in_buffer: dict[str, cp_model.IntVar] = field(default_factory=dict)   # on chip and not in any engine's registers


def _horizon(problem: Problem) -> int:
    return (sum(max(c for o in t.options for c in (o.cycles, *(x.cycles for x in o.variants))) for t in problem.tasks)
            + sum(problem.spill_cycles(b) for b in problem.buffers) + 1)


def _lags(model: cp_model.CpModel, v: ModelVars, task: str, tiles: int) -> cp_model.IntVar:
    """Cycles of one tile of `task`: ceil(duration / tiles)."""
    lag = model.NewIntVar(0, v.horizon, f"lag_{task}_{tiles}")
    model.Add(tiles * lag >= v.dur[task])
    return lag


def add_assignment(model: cp_model.CpModel, problem: Problem, v: ModelVars) -> None:
    """Each einsum runs on exactly one of the engines that can run it, for that engine's duration."""
    for task in problem.tasks:
        lits = [v.choose[(task.name, o.engine)] for o in task.options]
        model.AddExactlyOne(lits)
        saved = [(o.cycles - x.cycles) * v.variant[(task.name, o.engine, x.resident)] for o in task.options
                 for x in o.variants if (task.name, o.engine, x.resident) in v.variant]
        model.Add(v.dur[task.name] == sum(o.cycles * v.choose[(task.name, o.engine)] for o in task.options)
                  - sum(saved))
        shorter = [(o.tail_cycles - x.tail_cycles) * v.variant[(task.name, o.engine, x.resident)] for o in task.options
                   for x in o.variants if (task.name, o.engine, x.resident) in v.variant]
        own_tail = sum(o.tail_cycles * v.choose[(task.name, o.engine)] for o in task.options) - sum(shorter)
        # A fused consumer ends with its producer's last tile, so its end is not its own pipeline: no tail (the
        # replay likewise waits for it to finish before the engine's next einsum).
        fused_in = [v.fused[b.tensor] for b in problem.inputs_of(task.name) if b.tiles]
        if not fused_in:
            model.Add(v.tail[task.name] == own_tail)
            continue
        no_fused_input = model.NewBoolVar(f"no_fused_input_{task.name}")
        model.AddBoolAnd([lit.Not() for lit in fused_in]).OnlyEnforceIf(no_fused_input)
        model.AddBoolOr(fused_in).OnlyEnforceIf(no_fused_input.Not())
        model.Add(v.tail[task.name] == own_tail).OnlyEnforceIf(no_fused_input)
        model.Add(v.tail[task.name] == 0).OnlyEnforceIf(no_fused_input.Not())


def add_residency(model: cp_model.CpModel, problem: Problem, v: ModelVars) -> None:
    """A tensor stays in an engine's registers only if its producer and every consumer run on that engine and it
    is not spilled or fused; each einsum then takes the variant of exactly the tensors it keeps resident."""
    on = v.enabled["fusion"]
    for r in problem.residencies:
        lit = v.resident[(r.tensor, r.engine)]
        for task in r.tasks:
            model.AddImplication(lit, v.choose[(task, r.engine)])
        model.AddImplication(lit, v.on[r.tensor])
        model.Add(lit == 0).OnlyEnforceIf(on.Not())
    for task in problem.tasks:
        for o in task.options:
            held = [r for r in problem.residencies if r.engine == o.engine and task.name in r.tasks]
            if not held:
                continue
            offered = {x.resident for x in o.variants}
            for n in range(1, 1 << len(held)):
                subset = frozenset(r.tensor for i, r in enumerate(held) if n >> i & 1)
                lits = [v.resident[(r.tensor, o.engine)] if r.tensor in subset
                        else v.resident[(r.tensor, o.engine)].Not() for r in held]
                if subset not in offered:
                    model.AddBoolOr([lit.Not() for lit in lits])   # the engine cannot hold this combination
                    continue
                x = v.variant[(task.name, o.engine, subset)]
                model.AddBoolAnd(lits).OnlyEnforceIf(x)
                model.AddBoolOr([lit.Not() for lit in lits] + [x])


def add_precedence(model: cp_model.CpModel, problem: Problem, v: ModelVars) -> None:
    """A consumer starts after its producer ends (on chip), after a DRAM round trip (spill), or one tile in (fused)."""
    on = v.enabled["precedence"]
    for b in problem.buffers:
        for c in b.consumers:
            model.Add(v.start[c] >= v.end[b.producer]).OnlyEnforceIf([on, v.on[b.tensor]])
            model.Add(v.start[c] >= v.end[b.producer] + problem.spill_cycles(b)).OnlyEnforceIf(
                [on, v.spill[b.tensor]])
            if b.tiles:
                lag_p, lag_c = _lags(model, v, b.producer, b.tiles), _lags(model, v, c, b.tiles)
                model.Add(v.start[c] >= v.start[b.producer] + lag_p).OnlyEnforceIf([on, v.fused[b.tensor]])
                model.Add(v.end[c] >= v.end[b.producer] + lag_c).OnlyEnforceIf([on, v.fused[b.tensor]])


def _max_tail(option) -> int:
    return max((option.tail_cycles, *(x.tail_cycles for x in option.variants)))


def add_no_overlap(model: cp_model.CpModel, problem: Problem, v: ModelVars) -> None:
    """An engine runs one einsum at a time (fused pairs run on two engines, so they still overlap), except that an
    einsum may start min(its tail, its predecessor's tail) cycles before its predecessor ends (a pipeline tail,
    Option.tail_cycles): b after a needs start_b >= end_a - tail_a and start_b + tail_b >= end_a."""
    on = v.enabled["no_overlap"]
    engines: dict[str, list[tuple[str, int | None, cp_model.IntVar, int]]] = {}
    for task in problem.tasks:
        for o in task.options:
            # an option with register variants lasts the task's (variable) duration
            cycles = None if o.variants else o.cycles
            engines.setdefault(o.engine, []).append((task.name, cycles, v.choose[(task.name, o.engine)],
                                                     _max_tail(o)))
    for engine, members in engines.items():
        if len(members) < 2:
            continue
        tailed = any(tail for *_, tail in members)
        issue, late, present_of = [], [], {}
        for name, cycles, lit, _ in members:
            # NoOverlap takes no enforcement literal: each interval is present when its option is chosen
            # and the family is on
            present = model.NewBoolVar(f"busy_{name}_{engine}")
            model.AddBoolAnd([lit, on]).OnlyEnforceIf(present)
            model.AddBoolOr([lit.Not(), on.Not(), present])
            present_of[name] = present
            if not tailed and cycles is None:
                issue.append(model.NewOptionalIntervalVar(v.start[name], v.dur[name], v.end[name], present,
                                                          f"busy_{name}_{engine}"))
            elif not tailed:
                issue.append(model.NewOptionalFixedSizeIntervalVar(v.start[name], cycles, present,
                                                                   f"busy_{name}_{engine}"))
            else:
                # [start, end - tail) and [start + tail, end): the two no-overlaps are the two halves of the rule
                size = model.NewIntVar(1, v.horizon, f"occ_{name}_{engine}")
                issue_end = model.NewIntVar(0, v.horizon, f"issue_end_{name}_{engine}")
                late_start = model.NewIntVar(0, v.horizon, f"late_start_{name}_{engine}")
                model.Add(size == v.dur[name] - v.tail[name])
                model.Add(issue_end == v.end[name] - v.tail[name])
                model.Add(late_start == v.start[name] + v.tail[name])
                issue.append(model.NewOptionalIntervalVar(v.start[name], size, issue_end, present,
                                                          f"issue_{name}_{engine}"))
                late.append(model.NewOptionalIntervalVar(late_start, size, v.end[name], present,
                                                         f"late_{name}_{engine}"))
        model.AddNoOverlap(issue)
        if not tailed:
            continue
        model.AddNoOverlap(late)
        # one order for both halves: pairs where a tail could differ get an explicit order literal
        for i, (a, _, _, tail_a) in enumerate(members):
            for b, _, _, tail_b in members[i + 1:]:
                if not (tail_a or tail_b):
                    continue
                before = model.NewBoolVar(f"order_{a}_{b}_{engine}")
                both = [present_of[a], present_of[b]]
                for first, second, lit in ((a, b, before), (b, a, before.Not())):
                    model.Add(v.start[second] >= v.end[first] - v.tail[first]).OnlyEnforceIf([lit, *both])
                    model.Add(v.start[second] + v.tail[second] >= v.end[first]).OnlyEnforceIf([lit, *both])


def add_placement(model: cp_model.CpModel, problem: Problem, v: ModelVars) -> None:
    """Each intermediate tensor is on chip, spilled to the backing level (if it fits there) or fused."""
    on = v.enabled["placement"]
    for b in problem.buffers:
        model.AddExactlyOne([v.on[b.tensor], v.spill[b.tensor], v.fused[b.tensor]])
        if problem.spill_capacity_bytes is not None and b.bytes > problem.spill_capacity_bytes:
            model.Add(v.spill[b.tensor] == 0).OnlyEnforceIf(on)
        if not b.tiles:
            model.Add(v.fused[b.tensor] == 0).OnlyEnforceIf(on)
        else:
            c = b.consumers[0]
            # fused tiles flow between two engines; one engine cannot run both halves at once
            for o in problem.task(b.producer).options:
                if (c, o.engine) in v.choose:
                    model.AddBoolOr([v.fused[b.tensor].Not(), v.choose[(b.producer, o.engine)].Not(),
                                     v.choose[(c, o.engine)].Not()]).OnlyEnforceIf(on)
        model.AddMaxEquality(v.life_end[b.tensor], [v.end[c] for c in b.consumers])


def _in_buffer(model: cp_model.CpModel, problem: Problem, v: ModelVars, tensor: str) -> cp_model.IntVar:
    """The literal 'tensor occupies the on-chip buffer': on chip and kept in no engine's registers (a resident
    tensor moves tile by tile through the PEs' registers, Problem.residencies, never through the buffer)."""
    held = [v.resident[(r.tensor, r.engine)] for r in problem.residencies if r.tensor == tensor]
    if not held:
        return v.on[tensor]
    lit = model.NewBoolVar(f"in_buffer_{tensor}")
    model.AddBoolOr([v.on[tensor].Not(), *held, lit])
    model.AddImplication(lit, v.on[tensor])
    for h in held:
        model.AddImplication(lit, h.Not())
    return lit


def _footprints(problem: Problem, v: ModelVars, model: cp_model.CpModel
                ) -> list[tuple[Buffer, str, int, cp_model.IntervalVar]]:
    """Optional lifetime intervals of each tensor in the buffer (on chip outside registers, or fused), with their
    footprint in bytes."""
    out = []
    for b in problem.buffers:
        v.in_buffer[b.tensor] = _in_buffer(model, problem, v, b.tensor)
        for mode, size, lit in (("on_chip", b.bytes, v.in_buffer[b.tensor]),
                                ("fused", 2 * b.tile_bytes, v.fused[b.tensor])):
            if mode == "fused" and not b.tiles:
                continue
            size_var = model.NewIntVar(0, v.horizon, f"life_{b.tensor}_{mode}")
            interval = model.NewOptionalIntervalVar(v.start[b.producer], size_var, v.life_end[b.tensor], lit,
                                                    f"buf_{b.tensor}_{mode}")
            out.append((b, mode, size, interval))
    return out


def _tile_demands(model: cp_model.CpModel, problem: Problem, v: ModelVars
                  ) -> list[tuple[int, cp_model.IntVar, cp_model.IntervalVar]]:
    """(most bytes, demand, interval over the run) of each einsum whose tiles some intermediate could crowd
    (Option.tile_room_bytes > 0). The demand is the room its chosen option's tiles need less the bytes its own
    intermediates hold in the buffer: those live across its whole run (an input from its producer's start to its
    last consumer's end, an output from this start on) and are the home copies its tiles come from, so the
    cumulative then keeps exactly the room it needs free of the tensors it does not touch."""
    cap = problem.capacity_bytes
    out = []
    for task in problem.tasks:
        most = max(o.tile_room_bytes for o in task.options)
        if not most:
            continue
        own = (*problem.inputs_of(task.name), *problem.outputs_of(task.name))
        held = ([b.bytes * v.in_buffer[b.tensor] for b in own if b.bytes <= cap] +
                [2 * b.tile_bytes * v.fused[b.tensor] for b in own if b.tiles and 2 * b.tile_bytes <= cap])
        demand = model.NewIntVar(0, most, f"tiles_{task.name}")
        model.Add(demand >= sum(o.tile_room_bytes * v.choose[(task.name, o.engine)] for o in task.options)
                  - sum(held))
        run = model.NewIntervalVar(v.start[task.name], v.dur[task.name], v.end[task.name], f"run_{task.name}")
        out.append((most, demand, run))
    return out


def add_capacity(model: cp_model.CpModel, problem: Problem, v: ModelVars,
                 footprints: list[tuple[Buffer, str, int, cp_model.IntervalVar]]) -> None:
    """Live on-chip bytes, with the room each running einsum's tiles need beside them, never exceed the on-chip
    buffer; a tensor larger than it cannot stay on chip."""
    if problem.capacity_bytes is None:
        return
    on = v.enabled["capacity"]
    cap = problem.capacity_bytes
    for b, mode, size, _ in footprints:
        if size > cap:
            lit = v.in_buffer[b.tensor] if mode == "on_chip" else v.fused[b.tensor]
            model.Add(lit == 0).OnlyEnforceIf(on)
    fitting = [(size, iv) for _, _, size, iv in footprints if size <= cap]
    tiles = _tile_demands(model, problem, v)
    if fitting or tiles:
        # the capacity is relaxed to the total when the family is switched off
        total = sum(size for size, _ in fitting) + sum(most for most, _, _ in tiles)
        capacity = model.NewIntVar(cap, max(cap, total), "capacity")
        model.Add(capacity == cap).OnlyEnforceIf(on)
        model.AddCumulative([iv for _, iv in fitting] + [run for _, _, run in tiles],
                            [size for size, _ in fitting] + [demand for _, demand, _ in tiles], capacity)


def add_addresses(model: cp_model.CpModel, problem: Problem, v: ModelVars,
                  footprints: list[tuple[Buffer, str, int, cp_model.IntervalVar]]) -> None:
    """Each on-chip tensor gets an address range inside the buffer; live tensors never share addresses."""
    if problem.capacity_bytes is None:
        return
    cap = problem.capacity_bytes
    times, spaces = [], []
    for b, mode, size, interval in footprints:
        if size > cap:
            continue
        lit = v.in_buffer[b.tensor] if mode == "on_chip" else v.fused[b.tensor]
        address = model.NewIntVar(0, sum(f[2] for f in footprints), f"addr_{b.tensor}_{mode}")
        model.Add(address + size <= cap).OnlyEnforceIf(v.enabled["addresses"])
        v.address[(b.tensor, mode)] = address
        times.append(interval)
        spaces.append(model.NewOptionalFixedSizeIntervalVar(address, size, lit, f"space_{b.tensor}_{mode}"))
    if len(times) > 1:
        model.AddNoOverlap2D(times, spaces)


def add_required_fusions(model: cp_model.CpModel, problem: Problem, v: ModelVars) -> None:
    """A required (producer, consumer) fusion pipelines the pair: the consumer starts one tile after the producer
    starts and before it ends."""
    on = v.enabled["fusion"]
    for p, c in problem.required_fusions:
        buffer = next((b for b in problem.buffers if b.producer == p and b.consumers == (c,) and b.tiles), None)
        if buffer is not None:
            model.Add(v.fused[buffer.tensor] == 1).OnlyEnforceIf(on)
        model.Add(v.start[c] >= v.start[p] + 1).OnlyEnforceIf(on)
        model.Add(v.start[c] < v.end[p]).OnlyEnforceIf(on)


def _energy_terms(problem: Problem, v: ModelVars) -> tuple[list[tuple[float, cp_model.IntVar]], float]:
    terms = [(o.energy_j, v.choose[(t.name, o.engine)]) for t in problem.tasks for o in t.options]
    terms += [(x.energy_j - o.energy_j, v.variant[(t.name, o.engine, x.resident)]) for t in problem.tasks
              for o in t.options for x in o.variants if (t.name, o.engine, x.resident) in v.variant]
    terms += [(b.bytes * problem.spill_j_per_byte, v.spill[b.tensor]) for b in problem.buffers]
    worst = sum(max(o.energy_j for o in t.options) for t in problem.tasks) + sum(
        b.bytes * problem.spill_j_per_byte for b in problem.buffers)
    return terms, worst


def add_objective(model: cp_model.CpModel, problem: Problem, v: ModelVars, objective: str, weight: float) -> float:
    """Minimize the makespan, the energy (scaled to integers) or weight * makespan + (1 - weight) * energy."""
    v.makespan = model.NewIntVar(0, v.horizon, "makespan")
    model.AddMaxEquality(v.makespan, [v.end[t.name] for t in problem.tasks])
    terms, worst = _energy_terms(problem, v)
    scale = _ENERGY_SCALE / worst if worst > 0 else 0.0
    energy = sum(round(j * scale) * lit for j, lit in terms)
    if objective == "latency":
        # a spill only where it shortens the makespan: among equal makespans, fewer DRAM round trips
        spills = [v.spill[b.tensor] for b in problem.buffers]
        model.Minimize(v.makespan * (len(spills) + 1) + sum(spills))
        return float(len(spills) + 1)
    if objective == "energy":
        model.Minimize(energy * v.horizon + v.makespan)  # makespan breaks ties among equal energies
        return float(v.horizon)
    time_scale = _ENERGY_SCALE / v.horizon
    model.Minimize(round(1000 * weight) * time_scale * v.makespan + round(1000 * (1 - weight)) * energy)
    return 1.0


def build_model(problem: Problem, objective: str = "latency", weight: float = 0.5,
                addresses: bool = True) -> tuple[cp_model.CpModel, ModelVars]:
    """The CP-SAT model of `problem`, every family guarded by its assumption literal in `ModelVars.enabled`."""
    if objective not in ("latency", "energy", "mix"):
        raise ValueError(f"objective must be latency, energy or mix, got {objective!r}")
    model = cp_model.CpModel()
    horizon = _horizon(problem)
    start, end, dur, choose, interval = {}, {}, {}, {}, {}
    for task in problem.tasks:
        spans = [c for o in task.options for c in (o.cycles, *(x.cycles for x in o.variants))]
        lo, hi = min(spans), max(spans)
        start[task.name] = model.NewIntVar(0, horizon, f"s_{task.name}")
        end[task.name] = model.NewIntVar(0, horizon, f"e_{task.name}")
        dur[task.name] = model.NewIntVar(lo, hi, f"d_{task.name}")
        model.Add(end[task.name] == start[task.name] + dur[task.name])
        for o in task.options:
            lit = model.NewBoolVar(f"x_{task.name}_{o.engine}")
            choose[(task.name, o.engine)] = lit
            interval[(task.name, o.engine)] = model.NewOptionalFixedSizeIntervalVar(
                start[task.name], o.cycles, lit, f"i_{task.name}_{o.engine}")
    names = [b.tensor for b in problem.buffers]
    v = ModelVars(start, end, dur, choose, interval,
              {n: model.NewBoolVar(f"on_{n}") for n in names}, {n: model.NewBoolVar(f"spill_{n}") for n in names},
              {n: model.NewBoolVar(f"fused_{n}") for n in names},
              {n: model.NewIntVar(0, horizon, f"life_end_{n}") for n in names}, {},
              {f: model.NewBoolVar(f"family_{f}") for f in FAMILIES}, horizon)
    v.tail = {t.name: model.NewIntVar(0, max(_max_tail(o) for o in t.options), f"tail_{t.name}") for t in problem.tasks}
    v.resident = {(r.tensor, r.engine): model.NewBoolVar(f"reg_{r.tensor}_{r.engine}") for r in problem.residencies}
    for r in problem.residencies:
        for task in r.tasks:
            for o in problem.task(task).options:
                if o.engine == r.engine:
                    for x in o.variants:
                        key = (task, o.engine, x.resident)
                        if key not in v.variant and all((t, o.engine) in v.resident for t in x.resident):
                            v.variant[key] = model.NewBoolVar(f"var_{task}_{o.engine}_{len(v.variant)}")
    add_residency(model, problem, v)
    add_assignment(model, problem, v)
    add_precedence(model, problem, v)
    add_no_overlap(model, problem, v)
    add_placement(model, problem, v)
    footprints = _footprints(problem, v, model)
    add_capacity(model, problem, v, footprints)
    if addresses:
        add_addresses(model, problem, v, footprints)
    add_required_fusions(model, problem, v)
    add_objective(model, problem, v, objective, weight)
    return model, v


def make_solver(time_limit_s: float, seed: int) -> cp_model.CpSolver:
    """A deterministic CP-SAT solver: one worker, a fixed seed, a deterministic-time limit."""
    solver = new_solver(seed)
    # deterministic time makes the result independent of machine load; the wall limit is only a safety net, wide
    # because a deterministic second takes up to ~4 wall seconds on a small machine (a tighter net decided the
    # result by wall time there, so it varied with load)
    solver.parameters.max_deterministic_time = max(time_limit_s, 1e-3)
    solver.parameters.max_time_in_seconds = max(20 * time_limit_s, 5.0)
    return solver


def add_hint(model: cp_model.CpModel, problem: Problem, v: ModelVars, guess: Schedule) -> None:
    """Start the search from a list schedule (a feasible point when it respects the capacity, as it does)."""
    for slot in guess.slots:
        model.AddHint(v.start[slot.einsum], slot.start)
        for o in problem.task(slot.einsum).options:
            model.AddHint(v.choose[(slot.einsum, o.engine)], o.engine == slot.engine)
    held = {(t, slot.engine) for slot in guess.slots for t in slot.resident}
    for key, lit in v.resident.items():
        model.AddHint(lit, key in held)
    for b in guess.buffers:
        model.AddHint(v.on[b.tensor], b.placement in ("on_chip", "registers"))
        model.AddHint(v.spill[b.tensor], b.placement == "spill")
        model.AddHint(v.fused[b.tensor], b.placement == "fused")
