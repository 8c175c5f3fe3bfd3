"""pytest plugin for running NVIDIA's frontend test suite on a lease: keeps every Nth test of the
files named in FE_SAMPLE_FILES (default test_mhas.py, N = FE_SAMPLE_EVERY, default 40), after the
-m marker filter, so the real frontend and dnngraph run the same cases. FE_SAMPLE_SHARD=i/n keeps
the i-th of n interleaved shards of what is left (every file), so n processes share one GPU: the
real frontend compiles each attention case for seconds on one CPU core. Load with -p fe_sample."""
import os

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    every = int(os.environ.get("FE_SAMPLE_EVERY", "40"))
    files = set(os.environ.get("FE_SAMPLE_FILES", "test_mhas.py").split(","))
    kept, dropped, seen = [], [], {}
    for item in items:
        name = os.path.basename(str(item.fspath))
        if name in files:
            index = seen.get(name, 0)
            seen[name] = index + 1
            if index % every:
                dropped.append(item)
                continue
        kept.append(item)
    shard, shards = (int(x) for x in os.environ.get("FE_SAMPLE_SHARD", "0/1").split("/"))
    if shards > 1:
        dropped += [item for i, item in enumerate(kept) if i % shards != shard]
        kept = [item for i, item in enumerate(kept) if i % shards == shard]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
