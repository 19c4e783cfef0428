"""Strict YAML: duplicate keys and syntax errors carry lines; pydantic errors become located ConfigErrors;
`--set` overrides address keys by dots, list items by index or name, and never mutate their input."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from accel_sim.errors import ConfigError
from accel_sim.io.load import file_kind
from accel_sim.io.yaml import apply_overrides, format_key_path, load_yaml, parse_yaml, validate
from accel_sim.spec.arch import Arch

ARCH = """\
name: t
clock: 1 GHz
technology_nm: 7
memory:
  - name: dram
    technology: DRAM
    bandwidth: 100 GB/s
  - name: sram
    technology: SRAM
    capacity: 1 MiB
    bandwidth: 1 TB/s
engines:
  - name: mxu
    kind: systolic
    rows: 8
    cols: 8
"""


def arch_error(text: str) -> ConfigError:
    """The ConfigError validating `text` as an Arch raises."""
    with pytest.raises(ConfigError) as info:
        validate(Arch, parse_yaml(text, "t.yaml"))
    return info.value


def override_error(data: object, *assignments: str) -> ConfigError:
    """The ConfigError apply_overrides raises."""
    with pytest.raises(ConfigError) as info:
        apply_overrides(data, assignments, "t.yaml")
    return info.value


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------
def test_duplicate_top_level_key_reports_the_second_line() -> None:
    """'clock' on lines 2 and 3: the error is on line 3 and names line 2."""
    with pytest.raises(ConfigError) as info:
        parse_yaml("name: x\nclock: 1 GHz\nclock: 2 GHz\n", "d.yaml")
    err = info.value
    assert (err.file, err.line, err.key_path) == ("d.yaml", 3, "clock")
    assert "first on line 2" in err.problem and "keep one" in err.fix


def test_duplicate_key_inside_a_list_item_has_its_key_path() -> None:
    """A repeated 'bandwidth' in memory[1] is reported at memory[1].bandwidth, line 5."""
    text = "memory:\n  - name: a\n  - name: b\n    bandwidth: 1\n    bandwidth: 2\n"
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "d.yaml")
    assert (info.value.line, info.value.key_path) == (5, "memory[1].bandwidth")


def test_syntax_error_gives_its_line() -> None:
    """A tab-less but misindented mapping value fails on the line the parser stops (line 3)."""
    with pytest.raises(ConfigError) as info:
        parse_yaml("name: x\nclock: 1 GHz\n  bad: indent\n", "s.yaml")
    assert info.value.line == 3 and "invalid YAML syntax" in info.value.problem and "indentation" in info.value.fix


def test_unclosed_bracket_names_where_it_began() -> None:
    """'[a, b' left open on line 2 is noticed on line 3; the message names line 2 too."""
    with pytest.raises(ConfigError) as info:
        parse_yaml("name: x\nholds: [a, b\nnext: 1\n", "s.yaml")
    assert info.value.line == 3 and "began on line 2" in info.value.problem


def test_every_key_and_item_keeps_its_line() -> None:
    """lines maps key paths to 1-based lines; line_of falls back to the nearest known prefix."""
    doc = parse_yaml(ARCH, "t.yaml")
    assert doc.lines[("memory", 1, "capacity")] == 10
    assert doc.lines[("engines", 0)] == 13
    assert doc.line_of(("memory", 1, "no_such_key")) == 8


def parse_error(text: str) -> ConfigError:
    """The ConfigError parsing `text` raises."""
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "y.yaml")
    return info.value


def test_merge_key_fills_only_the_keys_a_mapping_does_not_set() -> None:
    """YAML's '<<': the explicit k wins over the merged one; of a merged list, the first mapping wins (m: 1)."""
    doc = parse_yaml("b: &b {m: 1, k: 2}\nd: &d {m: 5, z: 7}\nc: {<<: [*b, *d], k: 3}\n", "y.yaml")
    assert doc.data["c"] == {"k": 3, "m": 1, "z": 7}


def test_merging_a_mapping_into_itself_or_a_scalar_is_refused() -> None:
    """A merge cycle, or '<<' of a number, is a located error rather than a recursion or a crash."""
    cycle = parse_error("a: &x {p: 1, <<: *x}\n")
    assert cycle.key_path == "a" and "into itself" in cycle.problem
    assert "merges mappings only" in parse_error("c: {<<: 5}\n").problem


def test_tags_are_refused_on_values_and_on_collections() -> None:
    """'!foo' on a scalar, on a mapping and Python's object tag are errors at their line (standard '!!str' is
    read)."""
    assert parse_error("a: 1\nb: !foo 16\n").line == 2
    assert "!foo" in parse_error("ranks: !foo {m: 1}\n").problem
    assert parse_error("x: !!python/object:os.system 1\n").key_path == "x"
    assert parse_yaml("x: !!str 5\n", "y.yaml").data == {"x": "5"}


def test_alias_bombs_and_runaway_nesting_stop_with_a_message() -> None:
    """Aliases of aliases, nine times at six levels (531,441 x 9 values), and an alias holding itself, stop."""
    levels = ["a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    levels += [f"l{i}: &l{i} [{', '.join(['*' + ('a' if i == 0 else f'l{i - 1}')] * 9)}]" for i in range(7)]
    assert "more than 1,000,000 values" in parse_error("\n".join(levels) + "\n").problem
    assert "contains itself" in parse_error("a: &x [*x]\n").problem
    assert "too deeply" in parse_error("a: " + "[" * 5000 + "]" * 5000 + "\n").problem


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """Reading a file that is not there raises ConfigError naming it, with a fix."""
    with pytest.raises(ConfigError) as info:
        load_yaml(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(info.value) and "check the path" in info.value.fix


def test_key_paths_format_with_dots_and_indices() -> None:
    """('memory', 1, 'capacity') -> memory[1].capacity."""
    assert format_key_path(("memory", 1, "capacity")) == "memory[1].capacity"


# ---------------------------------------------------------------------------------------------
# config_error: pydantic errors -> file, line, key path, fix
# ---------------------------------------------------------------------------------------------
def test_unknown_key_suggests_the_close_one_and_lists_valid_keys() -> None:
    """'capasity' -> did you mean 'capacity', plus every valid level key, at memory[1].capasity line 10."""
    err = arch_error(ARCH.replace("capacity:", "capasity:"))
    assert (err.file, err.line, err.key_path) == ("t.yaml", 10, "memory[1].capasity")
    assert "did you mean 'capacity'?" in err.fix
    assert ("name, technology, capacity, bandwidth, read_bandwidth, write_bandwidth, read_energy_per_bit, "
            "write_energy_per_bit, area, banks, holds") in err.fix


def test_unknown_key_far_from_any_valid_one_only_lists() -> None:
    """A key like 'zzz' has no close match: no 'did you mean', still the list of valid keys."""
    err = arch_error(ARCH + "zzz: 1\n")
    assert err.key_path == "zzz" and "did you mean" not in err.fix and "technology_nm" in err.fix


def test_unknown_key_inside_a_tagged_engine_lists_that_engines_keys() -> None:
    """'rowz' for the required 'rows' is reported as unknown (with 'did you mean'), not as 'rows' missing;
    the valid keys are SystolicEngine's (dataflow, not lanes)."""
    err = arch_error(ARCH.replace("rows: 8", "rowz: 8"))
    assert (err.key_path, err.line) == ("engines[0].rowz", 15)
    assert "did you mean 'rows'?" in err.fix and "dataflow" in err.fix and "lanes" not in err.fix


def test_missing_key_says_to_add_it() -> None:
    """No 'clock' -> required key 'clock' is missing, fix 'add clock'."""
    err = arch_error(ARCH.replace("clock: 1 GHz\n", ""))
    assert err.key_path == "clock" and "missing" in err.problem and err.fix == "add 'clock' here"


def test_missing_key_in_a_list_item_points_at_the_item() -> None:
    """A level without bandwidth -> memory[0].bandwidth, on the line of that item (5)."""
    err = arch_error(ARCH.replace("    bandwidth: 100 GB/s\n", ""))
    assert (err.key_path, err.line) == ("memory[0].bandwidth", 5)


def test_bad_unit_names_the_unit_and_gives_an_example() -> None:
    """bandwidth: 100 GHz -> unknown bandwidth unit 'GHz' at memory[0].bandwidth line 7, example '900 GB/s'."""
    err = arch_error(ARCH.replace("100 GB/s", "100 GHz"))
    assert (err.key_path, err.line) == ("memory[0].bandwidth", 7)
    assert "unknown bandwidth unit 'GHz'" in err.problem and "900 GB/s" in err.fix


def test_unparseable_quantity_is_explained() -> None:
    """clock: fast -> not a frequency quantity, with an example."""
    err = arch_error(ARCH.replace("clock: 1 GHz", "clock: fast"))
    assert err.key_path == "clock" and "not a frequency quantity" in err.problem and "700 MHz" in err.fix


def test_wrong_engine_kind_lists_valid_kinds() -> None:
    """kind: tpu -> unknown kind 'tpu' at engines[0].kind on line 14; fix lists the kinds."""
    err = arch_error(ARCH.replace("kind: systolic", "kind: tpu"))
    assert (err.key_path, err.line) == ("engines[0].kind", 14)
    assert "unknown kind 'tpu'" in err.problem and "'systolic'" in err.fix and "'vector'" in err.fix


def test_missing_engine_kind_lists_valid_kinds() -> None:
    """An engine without 'kind' -> add 'kind:' with one of the kinds, at engines[0].kind."""
    err = arch_error(ARCH.replace("    kind: systolic\n", ""))
    assert err.key_path == "engines[0].kind"
    assert "add 'kind:'" in err.fix and "'systolic'" in err.fix and "'vector'" in err.fix


def test_literal_choice_error_lists_the_choices() -> None:
    """holds: [weight] -> 'weight' is not allowed; use 'weights' or 'activations'."""
    err = arch_error(ARCH.replace("bandwidth: 100 GB/s", "bandwidth: 100 GB/s\n    holds: [weight]"))
    assert err.key_path == "memory[0].holds[0]" and "'weights'" in err.fix and "'activations'" in err.fix


def test_scalar_where_a_list_belongs_asks_for_a_list() -> None:
    """memory: 3 -> expected a list."""
    err = arch_error("name: t\nclock: 1 GHz\ntechnology_nm: 7\nmemory: 3\nengines: []\n")
    assert (err.key_path, err.line) == ("memory", 4) and "expected a list" in err.problem


def test_scalar_where_a_mapping_belongs_asks_for_keys() -> None:
    """A memory item that is a bare string -> expected a mapping of keys at memory[0]."""
    err = arch_error(ARCH.replace("  - name: dram\n    technology: DRAM\n    bandwidth: 100 GB/s\n", "  - dram\n"))
    assert err.key_path == "memory[0]" and "expected a mapping" in err.problem


def test_validator_error_can_point_below_its_field() -> None:
    """A duplicate name found by the 'memory' validator is placed at memory[1].name (line 8), not 'memory'."""
    err = arch_error(ARCH.replace("name: sram", "name: dram"))
    assert (err.key_path, err.line) == ("memory[1].name", 8)


def test_validate_can_start_below_the_root() -> None:
    """validate(model, doc, root) checks a sub-tree and reports paths from the document root."""
    doc = parse_yaml("arch:\n" + "".join("  " + line + "\n" for line in ARCH.replace("1 GHz", "0 Hz").splitlines()),
                     "nested.yaml")
    with pytest.raises(ConfigError) as info:
        validate(Arch, doc, ("arch",))
    assert (info.value.key_path, info.value.line) == ("arch.clock", 3)


# ---------------------------------------------------------------------------------------------
# apply_overrides
# ---------------------------------------------------------------------------------------------
DATA = {"clock": "1 GHz",
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "100 GB/s"},
                   {"name": "sram", "technology": "SRAM", "capacity": "1 MiB"}],
        "engines": [{"name": "mxu", "rows": 8}]}


def test_override_by_index() -> None:
    """memory.1.capacity addresses the second level."""
    assert apply_overrides(DATA, ["memory.1.capacity=2 MiB"], "t")["memory"][1]["capacity"] == "2 MiB"


def test_override_by_the_bracketed_path_errors_print() -> None:
    """memory[1].capacity, as format_key_path writes it in every error, addresses what memory.1.capacity does."""
    out = apply_overrides(DATA, ["memory[1].capacity=2 MiB", "engines[mxu].rows=16"], "t")
    assert (out["memory"][1]["capacity"], out["engines"][0]["rows"]) == ("2 MiB", 16)


def test_override_by_name() -> None:
    """memory.sram.capacity and engines.mxu.rows address list items by their 'name'."""
    out = apply_overrides(DATA, ["memory.sram.capacity=4 MiB", "engines.mxu.rows=16"], "t")
    assert (out["memory"][1]["capacity"], out["engines"][0]["rows"]) == ("4 MiB", 16)


def test_override_values_are_read_as_yaml() -> None:
    """'128' -> int 128, '2.5' -> float, '32 MiB' -> string, '[weights]' -> list, 'true' -> bool."""
    out = apply_overrides(DATA, ["a=128", "b=2.5", "c=32 MiB", "d=[weights]", "e=true"], "t")
    assert [out[k] for k in "abcde"] == [128, 2.5, "32 MiB", ["weights"], True]


def test_override_does_not_mutate_its_input() -> None:
    """The input tree is unchanged; untouched branches are shared, touched ones copied."""
    before = copy.deepcopy(DATA)
    out = apply_overrides(DATA, ["memory.dram.bandwidth=1 GB/s"], "t")
    assert DATA == before and out["memory"][0]["bandwidth"] == "1 GB/s"
    assert out["engines"] is DATA["engines"]


def test_override_can_add_an_optional_key() -> None:
    """The last key may be new (optional keys are often absent): memory.dram.capacity is added."""
    assert apply_overrides(DATA, ["memory.dram.capacity=8 GiB"], "t")["memory"][0]["capacity"] == "8 GiB"


def test_later_override_wins() -> None:
    """Assignments apply in order."""
    assert apply_overrides(DATA, ["clock=2 GHz", "clock=3 GHz"], "t")["clock"] == "3 GHz"


def test_unknown_list_item_names_path_and_valid_names() -> None:
    """memory.nope.capacity -> no item 'nope', fix lists indices and the names dram, sram."""
    err = override_error(DATA, "memory.nope.capacity=1 MiB")
    assert err.key_path == "memory.nope.capacity" and "no item 'nope'" in err.problem
    assert "0..1" in err.fix and "dram, sram" in err.fix


def test_unknown_list_item_suggests_a_close_name() -> None:
    """memory.sarm -> did you mean 'sram'?"""
    assert "did you mean 'sram'?" in override_error(DATA, "memory.sarm.capacity=1").fix


def test_out_of_range_index_is_rejected() -> None:
    """memory.5 does not exist in a two-level list."""
    assert "no item '5'" in override_error(DATA, "memory.5.capacity=1").problem


def test_unknown_intermediate_key_lists_valid_keys() -> None:
    """memroy.dram.capacity -> no key 'memroy' at the top level; did you mean 'memory'; valid keys listed."""
    err = override_error(DATA, "memroy.dram.capacity=1")
    assert "no key 'memroy'" in err.problem and "did you mean 'memory'?" in err.fix
    assert "clock, memory, engines" in err.fix


def test_path_through_a_scalar_is_rejected() -> None:
    """clock.x -> clock is a single value; end the path at clock."""
    err = override_error(DATA, "clock.x=1")
    assert "single value" in err.problem and err.fix == "end the path at clock"


def test_ambiguous_name_asks_for_an_index() -> None:
    """Two items named 'a': addressing by name is refused, with the fix to use the index."""
    err = override_error({"items": [{"name": "a"}, {"name": "a"}]}, "items.a.x=1")
    assert "several items" in err.problem and "index" in err.fix


def test_assignment_without_equals_is_rejected() -> None:
    """'clock' alone is not PATH=VALUE."""
    assert "PATH=VALUE" in override_error(DATA, "clock").fix


def test_invalid_yaml_value_is_rejected() -> None:
    """A value that is not YAML (an unclosed list) gets a quoting hint."""
    assert "quote" in override_error(DATA, "clock=[1, 2").fix


def test_non_utf8_byte_is_located_whatever_its_position_and_suffixless_models_are_onnx(tmp_path: Path) -> None:
    """A Latin-1 byte past the first 4 KiB of a YAML file is a ConfigError at its line (was a UnicodeDecodeError);
    a model saved without the .onnx suffix is still told apart by its first byte (ir_version, 0x08)."""
    text = tmp_path / "arch.yaml"
    text.write_bytes(ARCH.encode() + b"# " + b"x" * 5000 + b"\n# caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        file_kind(text)
    assert info.value.line == ARCH.count("\n") + 2 and "byte 0xe9" in info.value.problem
    assert "save the file as UTF-8" in info.value.fix
    model = tmp_path / "model"
    model.write_bytes((Path(__file__).parents[2] / "data" / "bad" / "io_onnx_zero_dim.onnx").read_bytes())
    assert file_kind(model) == "onnx"


def test_a_key_with_dots_in_it_is_reached_by_its_path() -> None:
    """A GPU's instruction_rates has the key 'mma.sync': --set ...instruction_rates.mma.sync=0.5 (or the bracketed
    form) sets it, where splitting on every dot looked for a key 'mma' and suggested the very key it could not
    reach."""
    data = {"engines": [{"instruction_rates": {"wgmma": 1.0, "mma.sync": 0.3335}}]}
    for path in ("engines.0.instruction_rates.mma.sync", "engines[0].instruction_rates[mma.sync]"):
        out = apply_overrides(data, [f"{path}=0.5"], "t.yaml")
        assert out["engines"][0]["instruction_rates"] == {"wgmma": 1.0, "mma.sync": 0.5}
