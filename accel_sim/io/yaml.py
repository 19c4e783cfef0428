"""Strict YAML: duplicate keys are errors, every key keeps its line, pydantic errors become ConfigErrors."""
from __future__ import annotations

import difflib
import re
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from accel_sim.errors import ConfigError
from accel_sim.io.text import utf8_text

KeyPath = tuple[str | int, ...]
ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class YamlDoc:
    """Parsed YAML data plus the line (1-based) of every key and list item."""

    data: Any
    lines: dict[KeyPath, int]
    file: str
    overridden: dict[KeyPath, str] = field(default_factory=dict)  # key path -> the --set assignment that wrote it

    def line_of(self, key_path: KeyPath) -> int | None:
        """Line of the longest known prefix of `key_path`."""
        for end in range(len(key_path), -1, -1):
            if key_path[:end] in self.lines:
                return self.lines[key_path[:end]]
        return None


def format_key_path(key_path: KeyPath) -> str:
    """('memory', 1, 'capacity') -> 'memory[1].capacity'."""
    text = ""
    for key in key_path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def load_yaml(path: str | Path) -> YamlDoc:
    """Read a YAML file strictly; syntax errors and duplicate keys raise ConfigError with the line.

    Parsed files are kept (keyed by path, modification time and size): a sweep reads the same base config for
    every design point. Callers never mutate `data` (apply_overrides copies the containers it changes).
    """
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"cannot read the file ({exc.strerror})", file=path,
                          fix="check the path and that the file is readable") from None
    return _load_cached(str(path), str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _load_cached(shown: str, resolved: str, mtime_ns: int, size: int) -> YamlDoc:
    try:
        text = utf8_text(Path(resolved).read_bytes(), shown)
    except OSError as exc:
        raise ConfigError(f"cannot read the file ({exc.strerror})", file=shown,
                          fix="check the path and that the file is readable") from None
    return parse_yaml(text, shown)


# A file's values after its aliases are expanded, and its nesting depth: far beyond any real config, small
# enough that an alias "bomb" (aliases of aliases, each repeating the last) or a runaway nesting fails in
# milliseconds with a message rather than exhausting memory or Python's stack.
MAX_VALUES = 1_000_000
MAX_DEPTH = 64
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse YAML text (see load_yaml)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        start = getattr(exc, "context_mark", None)
        if start is not None and mark is not None and start.line != mark.line:
            # an unclosed bracket or quote is noticed lines later; name where it began too
            problem += f" ({getattr(exc, 'context', None) or 'the construct'} that began on line {start.line + 1})"
        raise ConfigError(f"invalid YAML syntax: {problem}", file=file,
                          line=mark.line + 1 if mark else None,
                          fix="check indentation, colons and quotes on that line") from None
    except RecursionError:
        raise ConfigError("the YAML nests too deeply for the parser (hundreds of levels)", file=file,
                          fix="flatten the brackets; no configuration nests that deep") from None
    lines: dict[KeyPath, int] = {}
    if node is not None and _expanded_values(node, 0, {}) > MAX_VALUES:
        # counted on the composed graph, where an alias is one shared node: refused before anything is expanded
        raise ConfigError(f"the file expands to more than {MAX_VALUES:,} values (its aliases repeat aliases)",
                          file=file, line=node.start_mark.line + 1,
                          fix="write the values out, or alias whole blocks only once")
    data = None if node is None else _Builder(file, lines).build(node, ())
    return YamlDoc(data, lines, file)


def _expanded_values(node: yaml.Node, depth: int, counted: dict[int, int]) -> int:
    """How many values `node` becomes once its aliases are expanded (memoized per shared node); a branch deeper
    than MAX_DEPTH, or one that contains itself, counts nothing here: _Builder refuses it by its depth."""
    if depth > MAX_DEPTH:
        return 0
    if id(node) in counted:
        return counted[id(node)]
    counted[id(node)] = 0   # a node met again inside itself (an alias holding itself) adds nothing
    if isinstance(node, yaml.MappingNode):
        children = [value for _, value in node.value]
    elif isinstance(node, yaml.SequenceNode):
        children = node.value
    else:
        children = []
    total = 1
    for child in children:
        total += _expanded_values(child, depth + 1, counted)
        if total > MAX_VALUES:
            break
    counted[id(node)] = total
    return total


@dataclass
class _Builder:
    """Turns composed YAML nodes into plain data, recording lines, refusing what a config never needs."""

    file: str
    lines: dict[KeyPath, int]
    values: int = 0
    merging: set[int] = field(default_factory=set)   # ids of the mappings being merged, to refuse a cycle
    # one loader constructs every scalar: a loader per scalar cost more than the rest of the parse
    constructor: yaml.SafeLoader = field(default_factory=lambda: yaml.SafeLoader(""))

    def refuse(self, node: yaml.Node, path: KeyPath, problem: str, fix: str) -> ConfigError:
        """A ConfigError at `node`'s line and `path`."""
        return ConfigError(problem, file=self.file, line=node.start_mark.line + 1,
                           key_path=format_key_path(path) or None, fix=fix)

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        """The value of `node` at `path`."""
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.refuse(node, path, f"the file expands to more than {MAX_VALUES:,} values (its aliases "
                              f"repeat aliases)", "write the values out, or alias whole blocks only once")
        if len(path) > MAX_DEPTH:
            raise self.refuse(node, path[:4], f"the YAML nests more than {MAX_DEPTH} levels deep (or an alias "
                              f"contains itself)", "flatten the nesting; no configuration nests that deep")
        self.lines.setdefault(path, node.start_mark.line + 1)
        if not isinstance(node, yaml.ScalarNode) and node.tag not in _PLAIN_TAGS:
            raise self.refuse(node, path, f"the YAML tag '{node.tag}' has no meaning here",
                              "remove the tag (the '!...' before the value)")
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        return self.scalar(node, path)

    def scalar(self, node: yaml.Node, path: KeyPath) -> Any:
        """A plain value; a tag the safe loader does not know is refused."""
        try:
            return self.constructor.construct_object(node)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            raise self.refuse(node, path, f"the value cannot be read: {problem}",
                              "remove the tag (the '!...' before the value) or quote the value") from None

    def mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[Any, Any]:
        """A mapping; duplicate keys are errors, and '<<: *alias' merges keys the mapping does not set itself."""
        out: dict[Any, Any] = {}
        merges = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merges.append(value_node)
                continue
            key = self.key(key_node, path)
            if key in out:
                raise self.refuse(key_node, path + (key,), f"duplicate key '{key}' (first on line "
                                  f"{self.lines[path + (key,)]})",
                                  "keep one of the two entries; YAML would silently drop the first")
            self.lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, path + (key,))
        for merged in merges:   # YAML's merge key: earlier mappings of a '<<: [*a, *b]' list win
            sources = merged.value if isinstance(merged, yaml.SequenceNode) else [merged]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise self.refuse(source, path, "'<<' merges mappings only",
                                      "write '<<: *name' where &name anchors a mapping, or a list of them")
                if id(source) in self.merging:
                    raise self.refuse(source, path, "'<<' merges a mapping into itself",
                                      "merge another mapping, one that does not contain this '<<'")
                self.merging.add(id(source))
                for key, value in self.mapping(source, path).items():
                    out.setdefault(key, value)
                self.merging.discard(id(source))
        return out

    def key(self, key_node: yaml.Node, path: KeyPath) -> str:
        """A mapping key as text: keys must be plain scalars."""
        key = self.scalar(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(key, (str, int, float, bool)):
            raise self.refuse(key_node, path, "mapping keys must be plain scalars", "write the key as a plain word")
        return key if isinstance(key, str) else str(key)


def validate(model: type[ModelT], doc: YamlDoc, root: KeyPath = ()) -> ModelT:
    """Validate `doc.data` (or the part at `root`) against a pydantic model; errors become ConfigError."""
    data = doc.data
    for key in root:
        data = data[key]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, doc, model, root) from None


def config_error(exc: ValidationError, doc: YamlDoc, model: type[BaseModel], root: KeyPath = ()) -> ConfigError:
    """The first pydantic error as a ConfigError naming file, line, key path and a fix."""
    errors = exc.errors()
    err = errors[0]
    if err["type"] == "missing":
        # a misspelt required key is both missing and unknown; the unknown one can say "did you mean"
        err = next((e for e in errors if e["type"] == "extra_forbidden" and e["loc"][:-1] == err["loc"][:-1]),
                   err)
    ctx = err.get("ctx", {})
    # validators may point below the field they check (e.g. the duplicate name in a list) via ctx['at']
    raw_loc = tuple(err["loc"]) + tuple(ctx.get("at", ()))
    kind, msg = err["type"], err["msg"]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        # point at the tag key itself, whose line is the one to fix
        raw_loc += (str(ctx.get("discriminator", "kind")).strip("'"),)
    loc = root + _data_path(raw_loc, doc.data, root)
    key_path = format_key_path(loc)
    if kind == "extra_forbidden":
        valid = _valid_keys(model, err["loc"][:-1])
        unknown = str(loc[-1])
        close = difflib.get_close_matches(unknown, valid, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        problem, fix = f"unknown key '{unknown}'", f"{hint}remove it or use one of: {', '.join(valid)}"
        other = _other_kinds_key(model, tuple(err["loc"]), unknown)
        if other:   # a key of another kind: its kind was changed (often by --set) and the old kind's keys stayed
            kind, path = other, format_key_path(loc[:-1])
            fix += (f"; '{unknown}' belongs to another kind, and a '{kind}' {path} takes only those keys (to change "
                    f"its kind on the command line, replace it whole: --set '{path}={{kind: {kind}}}')")
    elif kind == "missing":
        problem, fix = f"required key '{loc[-1]}' is missing", f"add '{loc[-1]}' here"
    elif kind == "union_tag_invalid":
        tag_key = str(ctx.get("discriminator", "kind")).strip("'")
        problem = f"unknown {tag_key} '{ctx.get('tag')}'"
        fix = f"use one of: {ctx.get('expected_tags')}"
    elif kind == "union_tag_not_found":
        tag_key = str(ctx.get("discriminator", "kind")).strip("'")
        tags = ", ".join(repr(t) for t in _tags_at(model, err["loc"]))
        problem, fix = f"the entry has no '{tag_key}'", f"add '{tag_key}:' with one of: {tags}"
    elif kind == "literal_error":
        problem, fix = f"{err.get('input')!r} is not allowed here", f"use one of: {ctx.get('expected')}"
    elif kind in ("tuple_type", "list_type"):
        problem = f"expected a list, got {type(err.get('input')).__name__} {err.get('input')!r}"
        fix = "write a YAML list, one '- item' per line"
    elif kind in ("model_type", "dict_type", "model_attributes_type"):
        problem = f"expected a mapping of keys, got {type(err.get('input')).__name__} {err.get('input')!r}"
        fix = "write 'key: value' lines indented under it"
    else:
        problem, _, fix = msg.removeprefix("Value error, ").partition(" Fix: ")
        fix = fix or f"give a valid value (got {err.get('input')!r})"
    blamed = next((text for path, text in doc.overridden.items() if loc[:len(path)] == path), None)
    if blamed is not None:  # the value came from the command line, not from the file's line
        return ConfigError(f"--set '{blamed}': {problem}", file=doc.file, line=None, key_path=key_path, fix=fix)
    # a check across fields (idd4r against idd3n) names one key; the --set that changed a sibling made it fail
    beside = [text for path, text in doc.overridden.items() if len(loc) > 1 and path[:len(loc) - 1] == loc[:-1]]
    if beside:
        problem = problem.rstrip(".") + " (after " + ", ".join(f"--set '{text}'" for text in beside) + ")"
    return ConfigError(problem, file=doc.file, line=doc.line_of(loc), key_path=key_path, fix=fix)


def _other_kinds_key(model: type[BaseModel], raw_loc: tuple[Any, ...], key: str) -> str | None:
    """The kind of the tagged mapping holding the unknown `key` (pydantic's location runs through its tag) when
    another kind of that union takes `key`, else None."""
    for i in range(len(raw_loc) - 1, 0, -1):
        members = _model_at(model, raw_loc[:i])
        if isinstance(members, list) and raw_loc[i] in [_tag_of(m) for m in members]:
            others = [m for m in members if _tag_of(m) != raw_loc[i]]
            takes = any(key in {f.alias or n for n, f in m.model_fields.items()} for m in others)
            return str(raw_loc[i]) if takes else None
    return None


def _data_path(loc: tuple[Any, ...], data: Any, root: KeyPath) -> KeyPath:
    """Drop pydantic's union-tag segments so the path matches the YAML keys."""
    for key in root:
        data = data[key]
    out: list[str | int] = []
    for part in loc:
        if isinstance(data, dict) and part in data:
            out.append(part)
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            out.append(part)
            data = data[part]
        elif isinstance(data, dict) and isinstance(part, str) and part not in data and part == loc[-1]:
            out.append(part)
    return tuple(out)


def _valid_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Keys accepted by the model found at `loc` (following nested models, lists and tagged unions)."""
    current = _model_at(model, loc)
    if isinstance(current, list):
        return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _tags_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[Any]:
    """Tags (e.g. engine kinds) of the tagged union found at `loc`."""
    current = _model_at(model, loc)
    return [_tag_of(m) for m in current] if isinstance(current, list) else []


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    """The model class, or list of tagged models, that validates the data at `loc`."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
            current = _model_in(field.annotation) if field is not None else None
        elif isinstance(current, list):
            current = next((m for m in current if _tag_of(m) == part), None)
    return current


def _model_in(annotation: Any) -> Any:
    """The model class (or list of tagged models) inside an annotation such as list[Union[...]]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    models = [m for a in args for m in ([_model_in(a)] if _model_in(a) is not None else [])]
    flat: list[Any] = []
    for m in models:
        flat.extend(m if isinstance(m, list) else [m])
    if len(flat) == 1:
        return flat[0]
    return flat or None


def _tag_of(model: Any) -> Any:
    field = getattr(model, "model_fields", {}).get("kind")
    if field is None:
        return None
    args = typing.get_args(field.annotation)
    return args[0] if args else None


def with_overrides(doc: YamlDoc, assignments: Sequence[str]) -> YamlDoc:
    """`doc` with each 'PATH=VALUE' applied (`apply_overrides`), remembering which key path each one wrote, so that
    a validation error there names the --set rather than the file's line."""
    written: dict[KeyPath, str] = dict(doc.overridden)
    data = doc.data
    for assignment in assignments:
        data = _apply_one(data, assignment, doc.file, written)
    return YamlDoc(data, doc.lines, doc.file, written)


def apply_overrides(data: Any, assignments: Sequence[str], file: str) -> Any:
    """A copy of `data` with each 'PATH=VALUE' applied; list items are addressed by index or by `name`.

    PATH uses dots (`memory.unified_buffer.capacity`, `engines.0.rows`, or `engines[0].rows` as errors print it); VALUE is read as YAML
    ("128" -> 128, "32 MiB" -> "32 MiB", "[weights]" -> a list). The last key of a mapping may be new
    (optional keys are often absent); the model's validation then judges it. `data` is not modified.
    """
    for assignment in assignments:
        data = _apply_one(data, assignment, file, {})
    return data


def _apply_one(data: Any, assignment: str, file: str, written: dict[KeyPath, str]) -> Any:
    path_text, sep, value_text = assignment.partition("=")
    path_text = path_text.strip()
    where = f"--set '{assignment}'"
    if not sep or not path_text:
        raise ConfigError(f"{where} is not an assignment", file=file, key_path=path_text,
                          fix="write --set PATH=VALUE, e.g. --set memory.unified_buffer.capacity='8 MiB'")
    try:
        value = yaml.safe_load(value_text) if value_text.strip() else None
    except yaml.YAMLError:
        raise ConfigError(f"{where}: the value is not valid YAML", file=file, key_path=path_text,
                          fix="quote the value, e.g. --set 'PATH=\"a: b\"'") from None
    # the bracketed form that errors print (memory[1].capacity) addresses the same key as memory.1.capacity
    keys = re.sub(r"\[([^\[\]]*)\]", r".\1", path_text).split(".")
    if any(not key for key in keys):
        raise ConfigError(f"{where}: the path has an empty segment", file=file, key_path=path_text,
                          fix="separate keys with single dots, e.g. memory.0.capacity")
    return _set_in(data, keys, value, (), _Assignment(where, path_text, file, assignment, written))


@dataclass(frozen=True)
class _Assignment:
    """One --set being applied: how errors name it, and where it records the key path it resolved to."""

    where: str
    path_text: str
    file: str
    text: str
    written: dict[KeyPath, str]


def _set_in(node: Any, keys: list[str], value: Any, done: KeyPath, job: _Assignment) -> Any:
    """A copy of `node` with `value` at `keys`; only the containers along the path are copied."""
    if not keys:
        job.written[done] = job.text
        return value
    where, path_text, file = job.where, job.path_text, job.file
    key, rest = keys[0], keys[1:]
    here = format_key_path(done) or "the top level"
    if isinstance(node, dict):
        if key not in node and rest:
            # a key with dots in it (a GPU's instruction_rates: mma.sync) is split by the path: join it back
            joined = next((j for j in range(len(keys), 1, -1) if ".".join(keys[:j]) in node), None)
            if joined is not None:
                key, rest = ".".join(keys[:joined]), keys[joined:]
        if key not in node and rest:
            valid = [str(k) for k in node]
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(f"{where}: no key '{key}' under {here}", file=file, key_path=path_text,
                              fix=f"{hint}use one of: {', '.join(valid) or '(none: the mapping is empty)'}")
        out = dict(node)
        out[key] = _set_in(node.get(key), rest, value, done + (key,), job)
        return out
    if isinstance(node, list):
        index = _list_index(node, key)
        if index == -1:
            raise ConfigError(f"{where}: several items in {here} are named '{key}'", file=file,
                              key_path=path_text, fix="address the item by its index instead, e.g. 0")
        if index is None:
            names = [str(item["name"]) for item in node if isinstance(item, dict) and "name" in item]
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            choices = f"an index 0..{len(node) - 1}" if node else "no index (the list is empty)"
            raise ConfigError(f"{where}: no item '{key}' in {here}", file=file, key_path=path_text,
                              fix=f"{hint}use {choices}" + (f" or one of the names: {', '.join(names)}"
                                                            if names else ""))
        out_list = list(node)
        out_list[index] = _set_in(node[index], rest, value, done + (index,), job)
        return out_list
    raise ConfigError(f"{where}: {here} is a single value ({node!r}), it has no key '{key}'", file=file,
                      key_path=path_text, fix=f"end the path at {format_key_path(done)}")


def _list_index(items: list[Any], key: str) -> int | None:
    """Position of the item addressed by `key` (an index, else the item named `key`); -1 if ambiguous."""
    if key.lstrip("-").isdigit():
        index = int(key)
        return index if 0 <= index < len(items) else None
    matches = [i for i, item in enumerate(items) if isinstance(item, dict) and str(item.get("name")) == key]
    if len(matches) > 1:
        return -1
    return matches[0] if matches else None
