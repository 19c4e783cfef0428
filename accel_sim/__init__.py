"""accel-sim: simulator and design-space explorer for deep-learning accelerators."""
