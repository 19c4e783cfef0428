"""Multi-objective design search with optuna: NSGA-II or TPE choose the designs of a sweep from its results.

The axes' value lists are the search space (one integer parameter per free axis: the index of its value, so a
sampler sees sizes in order). Each round asks `batch` trials, evaluates the new designs' points on the sweep's
executor (in parallel), commits every row to the store as a grid sweep does, and tells the study each trial's
outcome in trial order: the mean of every objective over the workloads; a constraint broken on any workload makes
the trial infeasible (its optuna constraint: the number of broken (workload, constraint) pairs); an invalid
or failed point fails it. A design asked again is told its known outcome without being evaluated again.

Resume: the study is rebuilt by asking the same trials again (samplers are seeded) and telling the outcomes the
store already holds, so a killed search resumes to the table an uninterrupted one writes. Each design's round
(1, 2, ...) goes to the store's `rounds` table, so a report can show the front's hypervolume round by round.
Results do not depend on the executor or on the order points finish in. Should the sampler keep proposing
evaluated designs (a space nearly exhausted), the next unevaluated designs in grid order complete the round,
added to the study as trials.
NSGA-II: K. Deb et al., IEEE TEVC 2002 (one generation per batch); TPE: Bergstra et al., NeurIPS 2011 (optuna's
multi-objective variant, the first batch random, constant liar for the batch's pending trials).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from accel_sim.dse.point import evaluate_point

if TYPE_CHECKING:
    from accel_sim.dse.executors import Executor
    from accel_sim.dse.spec import Sweep
    from accel_sim.dse.store import PointRow, ResultStore

ASKS_PER_NEW_DESIGN = 50   # asks that return only known designs before a round is completed in grid order
Outcome = tuple[str, tuple[float, ...], int]   # (optuna state name, objective values, broken constraints)


def _sampler(sweep: Sweep):  # -> optuna.samplers.BaseSampler
    """NSGA-II with one generation per batch, or multi-objective TPE, seeded (constraints come with each trial)."""
    import optuna  # optional extra 'search' (heavy): loaded only by an adaptive strategy

    strategy = sweep.spec.strategy
    if strategy.kind == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=strategy.batch, seed=strategy.seed)
    return optuna.samplers.TPESampler(n_startup_trials=strategy.batch, seed=strategy.seed, multivariate=True,
                                      constant_liar=True)


def outcome(sweep: Sweep, rows: list[PointRow]) -> Outcome:
    """A design's outcome from its rows (one per workload): failed, or the objectives' means and broken count."""
    if any(r.status not in ("ok", "infeasible") for r in rows):
        return "FAIL", (), 0
    values = []
    for metric in sweep.spec.objectives:
        found = [r.metrics.get(metric) for r in rows]
        if any(v is None or not math.isfinite(v) for v in found):
            return "FAIL", (), 0
        values.append(sum(found) / len(found))
    broken = sum(1 for r in rows if r.status == "infeasible" for c in sweep.constraints if not c.holds(r.metrics))
    return "COMPLETE", tuple(values), broken


def run_search(sweep: Sweep, db: ResultStore, executor: Executor, commit: Callable[[PointRow], None]) -> None:
    """Search `sweep.spec.strategy.n` distinct designs (module docstring), committing every new point's row."""
    import optuna  # optional extra 'search' (heavy): loaded only by an adaptive strategy

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    strategy = sweep.spec.strategy
    study = optuna.create_study(directions=["minimize" if d == "min" else "maximize"
                                            for d in sweep.spec.objectives.values()], sampler=_sampler(sweep))
    space = {path: optuna.distributions.IntDistribution(0, len(values) - 1) for path, values in sweep.free}
    done = db.finished_ids()
    known: dict[int, Outcome] = {}
    n_work = len(sweep.workload_paths)
    round_no = 0
    while len(known) < strategy.n:
        round_no += 1
        want = min(strategy.batch, strategy.n - len(known))
        asked: list[tuple[optuna.trial.Trial, int]] = []
        new: list[int] = []
        asks = 0
        while len(new) < want and asks < ASKS_PER_NEW_DESIGN * want:
            trial = study.ask(space)
            asks += 1
            design = sweep.design_index(trial.params)
            if design in known:
                _tell(study, trial, known[design])
                continue
            asked.append((trial, design))
            if design not in new:
                new.append(design)
        filler = list(itertools.islice(_unevaluated(sweep, known, new), want - len(new)))
        db.put_round(new + filler, round_no)  # the store keeps no order of its own: hypervolume per round needs it
        rows: dict[int, list[PointRow]] = {d: [] for d in new + filler}
        for row in executor.map_unordered(evaluate_point, sweep.tasks(skip=done, designs=new + filler)):
            commit(row)
            rows[row.design_id].append(row)
        stored = db.rows(p for d in new + filler for p in range(d * n_work, (d + 1) * n_work) if p in done)
        for row in stored:
            rows[row.design_id].append(row)
        for design, design_rows in rows.items():
            known[design] = outcome(sweep, sorted(design_rows, key=lambda r: r.point_id))
        for trial, design in asked:
            _tell(study, trial, known[design])
        for design in filler:
            _add(study, sweep, space, design, known[design])


def _unevaluated(sweep: Sweep, known: dict[int, Outcome], new: list[int]) -> Iterator[int]:
    """Designs not yet evaluated nor in this round, in grid order."""
    taken = set(new)
    return (d for d in range(sweep.designs) if d not in known and d not in taken)


def _tell(study, trial, result: Outcome) -> None:
    """Tell `trial` the outcome of its design."""
    import optuna  # optional extra 'search' (heavy): loaded only by an adaptive strategy

    state, values, broken = result
    if state == "FAIL":
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        return
    trial.set_constraint("broken", broken)   # optuna: <= 0 is feasible
    study.tell(trial, list(values))


def _add(study, sweep: Sweep, space: dict, design: int, result: Outcome) -> None:
    """Add a design the sampler did not ask for (a round completed in grid order) as a finished trial."""
    import optuna  # optional extra 'search' (heavy): loaded only by an adaptive strategy

    state, values, broken = result
    study.add_trial(optuna.trial.create_trial(
        params=sweep.design_indices(design), distributions=space, values=list(values) if state == "COMPLETE" else None,
        state=optuna.trial.TrialState.COMPLETE if state == "COMPLETE" else optuna.trial.TrialState.FAIL,
        constraints={"broken": broken} if state == "COMPLETE" else None))
