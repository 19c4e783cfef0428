"""Execution models that play a workload over time on shared resources (simpy)."""
