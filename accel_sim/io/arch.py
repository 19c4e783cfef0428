"""Architecture configs: strict YAML -> `--set` overrides -> validated, frozen `Arch`."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from accel_sim.errors import ConfigError
from accel_sim.io.yaml import YamlDoc, load_yaml, validate, with_overrides
from accel_sim.spec.arch import Arch
from accel_sim.spec.execution import with_execution_mapping


def load_arch(path: str | Path, overrides: Sequence[str] = ()) -> Arch:
    """Load an arch YAML file, apply `PATH=VALUE` overrides, and validate it into an `Arch`."""
    doc = load_yaml(path)
    return arch_from_doc(doc, overrides)


def arch_from_doc(doc: YamlDoc, overrides: Sequence[str] = ()) -> Arch:
    """Validate a parsed arch document (after overrides); errors name file, line, key path and fix."""
    if not isinstance(doc.data, dict):
        found = "an empty file" if doc.data is None else f"a YAML {type(doc.data).__name__}"
        raise ConfigError(f"the file is not a YAML mapping: an architecture config needs keys, but this is {found}",
                          file=doc.file, line=doc.line_of(()) or 1,
                          fix="write top-level keys: name, clock, technology_nm, memory (a list of levels) "
                              "and engines (a list of engines)")
    if overrides:
        # keys that overrides add keep the line of the nearest existing key (YamlDoc.line_of)
        doc = with_overrides(YamlDoc(with_execution_mapping(doc.data), doc.lines, doc.file), overrides)
    return validate(Arch, doc)
