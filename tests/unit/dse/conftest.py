"""Shared by the sweep and search tests: a 2-worker dask LocalCluster client."""
from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def dask_client() -> Iterator[object]:
    """A client of a 2-process dask LocalCluster (skipped without dask.distributed)."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed (pip install .[dask])")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client
