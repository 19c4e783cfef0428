"""Execution specs: how a workload runs on an arch, the `execution:` section of an arch config.

One frozen spec per kind, joined in the `AnyExecution` union on `kind`; each kind has one execution model
(accel_sim/sim/ and accel_sim/schedule/, picked by `evaluate`). The shorthand `execution: scheduled` is the
mapping `{kind: scheduled}` with every option at its default; `--set execution.policy=naive` and sweep axes
address the options by the same key paths.

- `sequential`: einsums one after another, each on the engine that serves the objective best.
- `scheduled`: the engines run concurrently; the CP-SAT graph scheduler places the einsums and a simpy replay
  plays the schedule (sim/scheduled.py).
- `npu_pim`: one batched LLM decode iteration co-simulated on an NPU sharing its HBM with PIM (NeuPIMs,
  Heo et al., ASPLOS 2024; sim/npu_pim.py).
- `pipelined`: `instances` independent copies of the workload (attention heads, batch items) software-pipelined
  by a periodic CP-SAT schedule (Rau, MICRO 1994; schedule/periodic.py): L + (N - 1) x II cycles.
- `fpga`: an FPGA design run as an overlay (sequential), as a dataflow of pipeline stages, or auto, choosing
  per group of operators (InTAR, He et al., FCCM 2025; sim/fpga_modes.py).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, NonNegativeInt

from accel_sim.spec.fields import SPEC_CONFIG, PositiveFloat, PositiveInt

# sim/scheduled.py's interactive defaults: 0.5 deterministic CP-SAT seconds keep `accel-sim run` interactive;
# graphs above 150 einsums are list-scheduled (CP-SAT would not close the gap within that limit)
SCHEDULE_TIME_LIMIT_S = 0.5
SCHEDULE_CPSAT_EINSUMS = 150


class SequentialExecution(BaseModel):
    """Einsums back to back, each on its best engine."""

    model_config = SPEC_CONFIG

    kind: Literal["sequential"] = "sequential"


class ScheduledExecution(BaseModel):
    """Engines run concurrently: CP-SAT graph schedule (fusion, on-chip placement) replayed in simpy."""

    model_config = SPEC_CONFIG

    kind: Literal["scheduled"] = "scheduled"
    time_limit_s: PositiveFloat = SCHEDULE_TIME_LIMIT_S       # deterministic CP-SAT seconds
    max_cpsat_einsums: NonNegativeInt = SCHEDULE_CPSAT_EINSUMS  # larger graphs get the list schedule


class NpuPimExecution(BaseModel):
    """One batched decode iteration on an NPU sharing HBM with PIM, under a policy, with request contexts."""

    model_config = SPEC_CONFIG

    kind: Literal["npu_pim"] = "npu_pim"
    # None: the arch's PIM engine decides (mode concurrent -> neupims, blocked -> naive, no PIM -> npu_only)
    policy: Literal["npu_only", "naive", "neupims"] | None = None
    # "fixed": every request attends the workload's own key positions; a distribution name: the contexts of a
    # continuously batched server at decode iteration `iteration` (sim/llm_requests.py), drawn with `seed`
    requests: Literal["fixed", "sharegpt", "alpaca"] = "fixed"
    iteration: NonNegativeInt = 4096
    seed: NonNegativeInt = 0


class PipelinedExecution(BaseModel):
    """`instances` copies of the workload issued every II cycles (periodic CP-SAT schedule of `copies` unrolled)."""

    model_config = SPEC_CONFIG

    kind: Literal["pipelined"] = "pipelined"
    instances: PositiveInt = 1
    rank: str = "instance"           # what one instance is (heads, batch items): names the count in summaries
    copies: PositiveInt = 2          # instances in flight that the periodic schedule unrolls
    time_limit_s: PositiveFloat = 5.0  # deterministic CP-SAT seconds
    seed: NonNegativeInt = 0


class FpgaExecution(BaseModel):
    """An FPGA design run sequentially (overlay), as a dataflow of stages, or auto (the faster per group)."""

    model_config = SPEC_CONFIG

    kind: Literal["fpga"] = "fpga"
    mode: Literal["sequential", "dataflow", "auto"] = "auto"
    max_stages: PositiveInt = 8      # einsums per group (pipeline stages of one dataflow)
    engine: str | None = None        # the FPGA engine; None: the arch's first engine of kind fpga


AnyExecution = Annotated[Union[SequentialExecution, ScheduledExecution, NpuPimExecution, PipelinedExecution,
                               FpgaExecution], Field(discriminator="kind")]
EXECUTION_KINDS: tuple[str, ...] = ("sequential", "scheduled", "npu_pim", "pipelined", "fpga")


def execution_mapping(value: Any) -> Any:
    """The mapping form of an `execution:` value: the shorthand 'scheduled' is {kind: scheduled}."""
    return {"kind": value} if isinstance(value, str) else value


def with_execution_mapping(data: Any) -> Any:
    """An arch document whose `execution` is a mapping (the default {kind: sequential} when absent), so that
    `--set execution.OPTION=...` and sweep axes find the key; `data` itself is not modified."""
    if not isinstance(data, dict):
        return data
    return {**data, "execution": execution_mapping(data.get("execution", "sequential"))}
