"""Speed and memory measurements; `make bench` runs them all (`python -m benchmarks`)."""
