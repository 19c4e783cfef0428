"""Workload and arch files, told apart by content: ONNX models, einsum cascades, zoo recipes, arch configs."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal, Sequence

from accel_sim.errors import ConfigError
from accel_sim.io.arch import load_arch as load_arch_file
from accel_sim.io.einsum import parse_cascade
from accel_sim.io.limits import MAX_ITERATION_POINTS
from accel_sim.io.recipe import load_recipe
from accel_sim.io.yaml import KeyPath, YamlDoc, format_key_path, load_yaml, with_overrides
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Workload, with_distinct_operands

FileKind = Literal["onnx", "einsum", "recipe", "arch", "sweep"]
YAML_SUFFIXES = (".yaml", ".yml")
ONNX_FIRST_BYTE = b"\x08"
REPO_ROOT = Path(__file__).resolve().parents[2]
SEARCH_DIRS = {"arch": REPO_ROOT / "arch_configs", "workload": REPO_ROOT / "workloads"}


def file_kind(path: str | Path) -> FileKind:
    """Which of the input formats a file holds (a sweep spec too), judged by its suffix, else by its content."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            head = file.read(1)
    except OSError as exc:
        raise ConfigError(f"cannot read the file ({exc.strerror})", file=path,
                          fix="check the path; `accel-sim list` shows the shipped configs and workloads") from None
    # An ONNX model is a protobuf ModelProto, serialized in field order: it opens with ir_version (field 1, a
    # varint), byte 0x08, which no text file starts with. Anything else is YAML, and a byte of it that is not
    # UTF-8 is reported as such (load_yaml), not as a broken ONNX model.
    if path.suffix == ".onnx" or (path.suffix.lower() not in YAML_SUFFIXES and head == ONNX_FIRST_BYTE):
        return "onnx"
    data = load_yaml(path).data
    if not isinstance(data, dict):
        raise ConfigError("the file is not a YAML mapping", file=path, line=1,
                          fix="start the file with keys such as 'einsums:', 'zoo:' or 'memory:'")
    if "einsums" in data:
        return "einsum"
    if "zoo" in data:
        return "recipe"
    if "engines" in data or "memory" in data:
        return "arch"
    if "axes" in data:
        return "sweep"
    raise ConfigError("cannot tell what kind of file this is", file=path, line=1,
                      fix="an arch config has 'memory:' and 'engines:', an einsum cascade 'einsums:', "
                          "a workload recipe 'zoo:', a sweep spec 'axes:'")


def resolve(path: str | Path, area: Literal["arch", "workload"]) -> Path:
    """A path as given, or a bare name of a shipped config/workload ('tpu_v1', 'gemm.einsum')."""
    candidate = Path(path)
    if candidate.exists():
        return candidate
    for name in (f"{path}", f"{path}.yaml", f"{path}.einsum.yaml", f"{path}.onnx"):
        shipped = SEARCH_DIRS[area] / name
        if shipped.exists():
            return shipped
    return candidate


def load_workload(path: str | Path, *, strict: bool = False, overrides: Sequence[str] = ()) -> Workload:
    """Load an ONNX model, einsum cascade or zoo recipe (`strict`: unsupported ONNX ops are errors), every
    einsum's iteration space bounded (MAX_ITERATION_POINTS) before anything is costed or allocated."""
    path = resolve(path, "workload")
    return _read_workload(path, strict, overrides)


def _bounded(workload: Workload, path: Path, doc: YamlDoc | None) -> Workload:
    """`workload`, once every einsum's iteration space is known to stay within MAX_ITERATION_POINTS; the error
    names the file's key that sets the largest rank (a cascade's rank, or the recipe parameter of that value)."""
    for einsum in workload.einsums:
        if einsum.iteration_points <= MAX_ITERATION_POINTS:
            continue
        sizes = " x ".join(f"{rank} {size:,}" for rank, size in einsum.rank_sizes)
        largest_rank, largest = max(einsum.rank_sizes, key=lambda item: item[1])
        key: KeyPath = ()
        if doc is not None and isinstance(doc.data, dict):
            if isinstance(doc.data.get("ranks"), dict) and largest_rank in doc.data["ranks"]:
                key = ("ranks", largest_rank)
            else:
                key = next(((name,) for name, value in doc.data.items()
                            if isinstance(value, int) and not isinstance(value, bool) and value == largest), ())
        blamed = next((text for written, text in (doc.overridden.items() if doc else ()) if written == key), None)
        raise ConfigError(f"einsum '{einsum.name}' iterates over {einsum.iteration_points:.3g} points ({sizes}), "
                          f"more than 2^53 = {MAX_ITERATION_POINTS:.3g}, beyond which counts are not exact"
                          + (f" (--set '{blamed}')" if blamed else ""),
                          file=path, line=doc.line_of(key) if doc is not None and key and not blamed else None,
                          key_path=format_key_path(key) or None,
                          fix="use smaller sizes (batch, sequence length, rank sizes" +
                              (" in the --set overrides" if doc is not None and doc.overridden else "") + ")")
    return with_distinct_operands(workload)


def _read_workload(path: Path, strict: bool, overrides: Sequence[str]) -> Workload:
    kind = file_kind(path)
    if kind == "onnx":
        if overrides:
            raise ConfigError("--set cannot change an ONNX model", file=path,
                              fix="drop the workload.* assignments, or use a zoo recipe or einsum cascade")
        from accel_sim.io.onnx import load_onnx  # pulls onnx (heavy): only for ONNX files

        return _bounded(load_onnx(path, strict=strict), path, None)
    doc = load_yaml(path)
    if overrides:
        doc = with_overrides(doc, overrides)
        # errors quote the assignment as the user wrote it (`--set workload.batch=...`)
        doc = replace(doc, overridden={k: f"workload.{v}" for k, v in doc.overridden.items()})
    if kind == "einsum":
        return _bounded(parse_cascade(doc), path, doc)
    if kind == "recipe":
        return _bounded(load_recipe(doc), path, doc)
    if kind == "sweep":
        raise ConfigError("this is a sweep spec, not a workload", file=path,
                          fix="run it with `accel-sim sweep`, or give an ONNX model, einsum cascade or zoo recipe")
    raise ConfigError("this is an architecture config, not a workload", file=path,
                      fix="pass it as ARCH (the first argument) and a workload file second")


def load_arch(path: str | Path, overrides: Sequence[str] = ()) -> Arch:
    """Load and validate an architecture config, applying `--set PATH=VALUE` overrides."""
    path = resolve(path, "arch")
    kind = file_kind(path)
    if kind != "arch":
        raise ConfigError(f"this is a workload file ({kind}), not an architecture config", file=path,
                          fix="pass an arch config (see arch_configs/) as ARCH and the workload second")
    return load_arch_file(path, overrides)


def split_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """`--set PATH=VALUE` assignments split into the arch's and the workload's (paths starting 'workload.')."""
    arch, workload = [], []
    for item in overrides:
        (workload if item.startswith("workload.") else arch).append(item.removeprefix("workload."))
    return arch, workload


