"""Example engine families of the test suite, joined to the shipped ones the way accel_sim/engines/__init__.py does.

`ExampleArch` is `Arch` with the extended union; `load_example_arch` reads an arch YAML that uses them. The
conformance suite (tests/conformance) runs every example arch in this folder beside the shipped configs.
"""
from __future__ import annotations

import typing
from pathlib import Path
from typing import Annotated, Union

from pydantic import Field

from accel_sim.engines import AnyEngine
from accel_sim.io.yaml import load_yaml, validate
from accel_sim.spec.arch import Arch
from examples.engines.dot_product import DotProductEngine

SHIPPED = typing.get_args(typing.get_args(AnyEngine)[0])
# the union line: in accel_sim/engines/__init__.py a new family is appended to AnyEngine the same way
ExampleEngine = Annotated[Union[(*SHIPPED, DotProductEngine)], Field(discriminator="kind")]
EXAMPLE_ARCHS = sorted(Path(__file__).parent.glob("*.yaml"))


class ExampleArch(Arch):
    """An Arch whose engines may also be the example families."""

    engines: tuple[ExampleEngine, ...]


def load_example_arch(path: Path) -> Arch:
    """An example arch YAML validated with the example engine families."""
    return validate(ExampleArch, load_yaml(path))
