"""`python -m accel_sim.cli`: the `accel-sim` console script."""
from accel_sim.cli import console

console()
