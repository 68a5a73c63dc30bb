"""Shared test set-up: hypothesis profiles and the backend parametrization.

`HYPOTHESIS_PROFILE=ci` (used by `make test`) keeps example counts small so the
whole suite stays well under 15 minutes on 2 cores; `dev` explores more.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from dimgraph.backends import available_backends

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# DIMGRAPH_TEST_BACKENDS=python,numba restricts the backend-parametrized suites (default: every registered
# backend that runs every op; `mlir` covers a subset and has its own suite, tests/backends/test_mlir.py).
PARTIAL_BACKENDS = {"mlir"}
DEFAULT = ",".join(b for b in available_backends() if b not in PARTIAL_BACKENDS)
BACKENDS = [b for b in os.environ.get("DIMGRAPH_TEST_BACKENDS", DEFAULT).split(",") if b]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Every registered backend; suites that use it run once per backend."""
    return request.param
