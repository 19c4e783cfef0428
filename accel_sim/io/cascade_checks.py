"""Consistency checks of an einsum cascade as a whole (io/einsum.py parses each einsum; these read them together).

One writer per tensor and producers first, every declared rank used (a misspelt rank in the file or a --set is
an error), one size per tensor dimension (A[m,k] read later as A[k,m] is not a silently square tensor), no
misspelt tensor names becoming new inputs, and accesses within their tensors. Each failure is a ConfigError with
the file, line, key path and fix.
"""
from __future__ import annotations

import difflib
from typing import Collection, Mapping, Sequence

from accel_sim.errors import ConfigError
from accel_sim.io.yaml import KeyPath, YamlDoc, format_key_path
from accel_sim.spec.workload import Affine, Einsum, Tensor


def error_at(doc: YamlDoc, path: KeyPath, problem: str, fix: str) -> ConfigError:
    """A ConfigError at `path` of a cascade document: its file, line and key path."""
    return ConfigError(problem, fix=fix, file=doc.file, line=doc.line_of(path), key_path=format_key_path(path))


def check_graph(einsums: Sequence[Einsum], doc: YamlDoc) -> None:
    """Unique names, one writer per tensor, producers before consumers, one rank count per tensor."""
    names: dict[str, int] = {}
    writers: dict[str, int] = {}
    ndims: dict[str, tuple[int, int]] = {}
    for i, e in enumerate(einsums):
        path: KeyPath = ("einsums", i)
        out = e.output.tensor
        if out in writers:
            raise error_at(doc, path, f"tensor '{out}' is written by two einsums (first by einsums[{writers[out]}])",
                            "write each tensor once; give one of the outputs a new name, or express a running "
                            "reduction as one einsum that reads its previous step")
        writers[out] = i
        if e.name in names:
            raise error_at(doc, path, f"einsum name '{e.name}' is already used by einsums[{names[e.name]}]",
                            "give this einsum a unique name with the mapping form {name: ..., expr: ...}")
        names[e.name] = i
        for acc in (*e.inputs, e.output):
            first = ndims.setdefault(acc.tensor, (len(acc.indices), i))
            if first[0] != len(acc.indices):
                raise error_at(doc, path, f"tensor '{acc.tensor}' has {len(acc.indices)} indices in '{acc}' "
                                f"but {first[0]} in einsums[{first[1]}]",
                                f"index '{acc.tensor}' with the same number of dimensions everywhere")
    for i, e in enumerate(einsums):
        for acc in e.inputs:
            j = writers.get(acc.tensor)
            if j is not None and j > i:
                loop = _path(einsums, writers, i, j)
                if loop:   # reordering cannot help: each einsum of the loop needs the one before it first
                    steps = " -> ".join(f"einsums[{k}] '{einsums[k].output.tensor}'" for k in (*loop, i))
                    raise error_at(doc, ("einsums", i), f"the einsums form a cycle, each reading the tensor of the "
                                    f"one before it: {steps}", "a tensor cannot feed its own producer: break the "
                                    "cycle by reading a tensor from outside it, or express a recurrence as one "
                                    "einsum that reads its own previous step")
                raise error_at(doc, ("einsums", i), f"'{e.name}' reads '{acc.tensor}', which einsums[{j}] "
                                "writes later", f"list einsums[{j}] before einsums[{i}] (producers first)")


def _path(einsums: Sequence[Einsum], writers: Mapping[str, int], start: int, goal: int) -> list[int]:
    """Einsum positions from `start` to `goal` along producer -> consumer edges (each reads the one before it's
    output), or [] if `goal` does not depend on `start`."""
    import networkx as nx  # networkx is heavy to import: loaded only when a cascade reads a tensor written later

    graph = nx.DiGraph([(w, k) for k, e in enumerate(einsums) for acc in e.inputs
                        if (w := writers.get(acc.tensor)) is not None and w != k])
    graph.add_nodes_from((start, goal))
    try:
        return nx.shortest_path(graph, start, goal)
    except nx.NetworkXNoPath:
        return []


def check_ranks_used(einsums: Sequence[Einsum], sizes: Mapping[str, int], doc: YamlDoc) -> None:
    """Every declared rank indexes some einsum: an unused one is a misspelling (in the file or a --set)."""
    used = {r for e in einsums for r in e.sizes}
    for rank in sizes:
        if rank in used:
            continue
        close = difflib.get_close_matches(rank, sorted(used), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        fix = f"{hint}use one of the ranks the einsums index: {', '.join(r for r in sizes if r in used)}"
        path: KeyPath = ("ranks", rank)
        if path in doc.overridden:
            raise ConfigError(f"--set '{doc.overridden[path]}': the cascade has no rank '{rank}'", fix=fix,
                              file=doc.file, key_path=format_key_path(path))
        raise error_at(doc, path, f"rank '{rank}' is declared but no einsum uses it",
                        f"{hint}remove it, or index a tensor with it")


def plain_rank(index: Affine) -> str | None:
    """The rank of an index that is exactly one rank (``m``, not ``m+1`` or ``2*p``), else None."""
    return index.terms[0][0] if index.offset == 0 and len(index.terms) == 1 and index.terms[0][1] == 1 else None


def check_dimension_ranks(einsums: Sequence[Einsum], doc: YamlDoc) -> None:
    """A tensor dimension indexed by a plain rank has that rank's size in every access, so that A[m,k] read
    later as A[k,m] (m != k) is an error, not a silently square tensor."""
    first: dict[tuple[str, int], tuple[str, int, int]] = {}  # (tensor, dim) -> (rank, size, einsum position)
    for i, e in enumerate(einsums):
        for acc in (e.output, *e.inputs):
            for d, index in enumerate(acc.indices):
                rank = plain_rank(index)
                if rank is None:
                    continue
                seen = first.setdefault((acc.tensor, d), (rank, e.sizes[rank], i))
                if seen[1] != e.sizes[rank]:
                    raise error_at(doc, ("einsums", i), f"dimension {d} of '{acc.tensor}' is indexed by rank "
                                    f"'{rank}' (size {e.sizes[rank]}) in '{acc}' but by rank '{seen[0]}' (size "
                                    f"{seen[1]}) in einsums[{seen[2]}]",
                                    f"index '{acc.tensor}' with its ranks in the same order everywhere, or give "
                                    "the ranks of one dimension the same size")


def check_inputs_spelt(einsums: Sequence[Einsum], declared: Collection[str], doc: YamlDoc) -> None:
    """A misspelt tensor name (lookalike_inputs) is an error: it would otherwise become a new workload input."""
    written = {e.output.tensor: i for i, e in enumerate(einsums)}
    for name, (i, close) in lookalike_inputs(einsums, declared).items():
        raise error_at(doc, ("einsums", i), f"'{einsums[i].name}' reads '{name}', which no einsum writes, and "
                        f"einsums[{written[close]}] writes '{close}'",
                        f"did you mean '{close}'? If '{name}' is a workload input, declare it under 'tensors:' "
                        f"(e.g. {name}: {{kind: activation}})")


def lookalike_inputs(einsums: Sequence[Einsum], declared: Collection[str]) -> dict[str, tuple[int, str]]:
    """Tensors read but neither written nor declared whose name looks like a misspelling of a written tensor,
    each with its first reader's position and that tensor. It looks like one when the names differ only in
    case, or by one edit (one_edit_apart) and either is three characters or longer or the written tensor is
    read by no einsum (two-letter names such as S0 and T0 are common), or when an earlier einsum writes, by the same
    indices, a tensor that no einsum reads."""
    written = {e.output.tensor for e in einsums}
    read = {acc.tensor for e in einsums for acc in e.inputs}
    found: dict[str, tuple[int, str]] = {}
    for i, e in enumerate(einsums):
        for name in dict.fromkeys(acc.tensor for acc in e.inputs):
            if name in written or name in declared or name in found:
                continue
            close = [w for w in written if name.lower() == w.lower() or one_edit_apart(name, w)
                     and (min(len(name), len(w)) >= 3 or w not in read)]
            # a name too short to judge by its spelling (Z read as Zz or Q): an output nothing reads, written
            # earlier with the very indices this einsum reads the new name by, is what it meant
            indices = next(acc.indices for acc in e.inputs if acc.tensor == name)
            close += [w.output.tensor for w in einsums[:i] if w.output.tensor not in read
                      and w.output.indices == indices]
            if close:
                found[name] = (i, close[0])
    return found


def one_edit_apart(a: str, b: str) -> bool:
    """Both at least two characters, and one character replaced, added or dropped, or two neighbours swapped;
    numbered names (T0, T1) differ by a digit on purpose and are not one edit apart."""
    if min(len(a), len(b)) < 2 or abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        diff = [k for k in range(len(a)) if a[k] != b[k]]
        if len(diff) == 1:
            return not (a[diff[0]].isdigit() and b[diff[0]].isdigit())
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long = sorted((a, b), key=len)
    return any(long[:k] + long[k + 1:] == short for k in range(len(long)))


def check_writes_in_bounds(einsums: Sequence[Einsum], tensors: Mapping[str, Tensor], doc: YamlDoc) -> None:
    """Writes stay inside their tensor; reads stay inside what they read (a produced tensor's written indices,
    its step 0 for a running reduction's init, an input's shape), except a window whose negative offset pads it
    (``I[2*p + r - 3]``), and that by at most its offset on either side: a declared shape smaller than a read is an
    error, not zero padding, and so is a read that only ever sees padding or steps no einsum wrote."""
    written = _written_ranges(einsums)
    for i, e in enumerate(einsums):
        for acc in (e.output, *e.inputs):
            tensor = tensors[acc.tensor]
            for d, (ix, extent) in enumerate(zip(acc.indices, tensor.shape)):
                low, high = ix.value_range(e.sizes)
                if acc is e.output:
                    if low < 0 or high >= extent:
                        raise error_at(doc, ("einsums", i), f"'{e.output}' writes index {low}..{high} of dimension "
                                        f"{d}, outside '{tensor.name}' (size {extent})",
                                        f"make the output indices stay within 0..{extent - 1} or enlarge its shape")
                    continue
                first, last = written[acc.tensor][d] if acc.tensor in written else (0, extent - 1)
                what = (f"'{tensor.name}' (written at {first}..{last})" if acc.tensor in written
                        else f"'{tensor.name}' (size {extent})")
                pad = -ix.offset if ix.offset < 0 else 0
                if high < first or low > last:
                    raise error_at(doc, ("einsums", i), f"'{acc}' reads index {low}..{high} of dimension {d}, "
                                   f"entirely outside {what}: " + ("no einsum writes what it reads"
                                   if acc.tensor in written else "every value it reads would be padding"),
                                   f"index '{tensor.name}' within {first}..{last}")
                if low < first - pad or high > last + pad:
                    raise error_at(doc, ("einsums", i), f"'{acc}' reads index {low}..{high} of dimension {d}, "
                                   f"outside {what}" + (f" by more than its window's padding ({pad})" if pad else ""),
                                   f"index it within {first}..{last}" + ("" if acc.tensor in written else
                                   f", or enlarge the shape of '{tensor.name}' to at least {high + 1 - pad} there")
                                   + " (a window with a negative offset, such as 2*p + r - 3, pads by that offset)")


def _written_ranges(einsums: Sequence[Einsum]) -> dict[str, list[tuple[int, int]]]:
    """Produced tensor -> per dimension the indices its writer covers (from 0 for a running reduction, whose
    step 0 is its init)."""
    ranges = {}
    for e in einsums:
        spans = [ix.value_range(e.sizes) for ix in e.output.indices]
        if e.recurrence_rank is not None:
            spans = [(min(lo, 0), hi) for lo, hi in spans]
        ranges[e.output.tensor] = spans
    return ranges
