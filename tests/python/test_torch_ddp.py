"""Issue #23 on the CPU: bench/ddp_encoder.py trains the encoder with DistributedDataParallel (gloo,
two processes) in plain PyTorch and through dnngraph's torch.compile backend; the losses must agree
within 1% and dnngraph must have run partitions. Skipped without torch."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "ddp_encoder.py")


def test_ddp_losses_of_dnngraph_match_pytorch_on_two_gloo_processes():
    r = subprocess.run([sys.executable, BENCH, "--procs", "2", "--steps", "21", "--layers", "1"],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "PASS (within 1%)" in r.stdout, r.stdout
    assert "fell back to PyTorch" in r.stdout and " 0 partitions" not in r.stdout, r.stdout
