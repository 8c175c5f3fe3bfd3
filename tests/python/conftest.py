"""Shared helpers for the dnngraph Python tests: seeded data, NaN-poisoned outputs, building and
running a graph on the CPU handle, and skipping tests whose feature the library says is pending."""
import contextlib
import os
import sys
import zlib

import numpy as np
import pytest

import dnngraph

# `import cudnn` resolves to dnngraph through the shim, for the ported frontend tests (test_fe_*.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cudnn_shim"))

# The tuning DB and kernel caches of this test session live in a folder of its own: mode A reads the
# DB, so a record an earlier run left in ~/.cache/dnngraph (or a test's autotune here) must not
# change another test's plan, and tests must not write into the user's cache.
if "DNNGRAPH_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["DNNGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="dnngraph_pytest_")
    os.environ.pop("DNNGRAPH_TUNING_DB", None)

# fp32 ~1e-5 relative, tf32 ~1e-3, fp16 ~3e-3, bf16 ~1e-2 (the project's tolerances by precision).
TOL = {np.float32: 1e-5, np.float16: 3e-3, np.float64: 1e-12}


@pytest.fixture
def rng(request):
    # One seed per test, stable across runs.
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


@pytest.fixture(scope="session")
def cpu():
    return dnngraph.create_handle("cpu")


def rand(rng, shape, dtype=np.float32, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(dtype)


def poisoned(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype=dtype)


def assert_close(actual, expected, dtype=np.float32, scale=1.0):
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


def is_pending(exc):
    return "pending" in str(exc)


@contextlib.contextmanager
def skip_if_pending():
    """Runs the body; a library error that says the feature is pending skips the test."""
    try:
        yield
    except (RuntimeError, ValueError) as e:
        if is_pending(e):
            pytest.skip(f"pending in the library: {e}")
        raise


def build(g, policy=None):
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans(policy if policy is not None else dnngraph.build_plan_policy.HEURISTICS_CHOICE)


def workspace(g):
    return np.empty(max(g.get_workspace_size(), 1), np.uint8)


def run(g, pack):
    build(g)
    g.execute(pack, workspace(g))


def graph(handle, io=dnngraph.data_type.FLOAT):
    return dnngraph.pygraph(io_data_type=io, intermediate_data_type=dnngraph.data_type.FLOAT,
                            compute_data_type=dnngraph.data_type.FLOAT, handle=handle)


def pytest_configure(config):
    # The frontend's test levels, kept on the ported tests (test_fe_*.py).
    config.addinivalue_line("markers", "L0: the cuDNN frontend's level-0 tests")
