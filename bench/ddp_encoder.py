"""Issue #23: the transformer encoder of bench/torch_models.py trained with PyTorch's
DistributedDataParallel, once in plain PyTorch and once through `torch.compile(backend="dnngraph")`
(dnngraph runs the forward's partitions, PyTorch the backward and the all-reduces), from the same
seed and data: the global loss at every 20th step side by side, the median step time, and its
scaling from one process to --procs.

    python3 bench/ddp_encoder.py [--procs 2] [--steps 200] [--device cpu|cuda] [--layers 2 ...]

It spawns its processes itself: gloo on the CPU, NCCL on CUDA with one GPU per process.
"""
import argparse
import os
import socket
import statistics
import sys
import time
from typing import Dict, List, Tuple

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import transformer_encoder  # noqa: E402

# variant, processes, losses every 20th step, median step s, what dnngraph ran (rank 0)
Result = Tuple[str, int, List[float], float, str]


def free_port() -> int:
    """A TCP port nothing listens on, for the process group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def train(rank: int, world: int, variant: str, args: argparse.Namespace, port: int, out: "mp.Queue[Result]") -> None:
    """One process: the DDP-wrapped encoder trained args.steps steps on this rank's batches."""
    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.set_num_threads(max(1, args.threads))
    dtype = torch.bfloat16 if cuda else torch.float32
    model = transformer_encoder(0, args.layers, args.hidden, args.heads, args.ffn).train().to(device, dtype)
    ddp = DistributedDataParallel(model, device_ids=[rank] if cuda else None)
    if variant == "dnngraph":
        import dnngraph.torch  # noqa: F401 - registers the backend
        net = torch.compile(ddp, backend="dnngraph")
    else:
        net = ddp
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    losses, times = [], []
    for step in range(args.steps):
        # Every rank its own batch, the same in both variants: seeded by step and rank.
        gen = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(args.batch, args.seq, args.hidden, generator=gen).to(device, dtype)
        y = torch.randn(args.batch, args.seq, args.hidden, generator=gen).to(device, dtype)
        t0 = time.perf_counter()
        loss = F.mse_loss(net(x).float(), y.float())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if step % 20 == 0 or step == args.steps - 1:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            losses.append(float(mean) / world)
    if rank == 0:
        out.put((variant, world, losses, statistics.median(times[min(10, len(times) - 1):]), lowered_summary(variant)))
    dist.destroy_process_group()


def lowered_summary(variant: str) -> str:
    """How many of the compiled graph's partitions ran as dnngraph graphs, and their ops."""
    if variant != "dnngraph":
        return ""
    import dnngraph.torch as dt
    ran, fell, ops = 0, 0, 0
    for p in dt.partitions():
        for b in p.builds.values():
            if b.graph is None:
                fell += 1
            else:
                ran, ops = ran + 1, ops + len(p.node_names)
    return f"{ran} partitions ({ops} aten ops) on dnngraph, {fell} fell back to PyTorch"


def run(variant: str, world: int, args: argparse.Namespace) -> Result:
    """Spawns `world` processes of `train` and returns rank 0's result."""
    ctx = mp.get_context("spawn")
    out: "mp.Queue[Result]" = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=train, args=(r, world, variant, args, port, out)) for r in range(world)]
    for p in procs:
        p.start()
    result = out.get()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"{variant} x{world}: a process exited with {p.exitcode}")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per process (CPU)")
    args = ap.parse_args()
    print(f"torch {torch.__version__}; device {args.device}; "
          f"{torch.cuda.get_device_name(0) if args.device == 'cuda' else os.uname().machine}; "
          f"encoder {args.layers}x{args.hidden} heads {args.heads} ffn {args.ffn}, batch {args.batch}x{args.seq} a process")
    results: Dict[Tuple[str, int], Result] = {}
    for world in sorted({1, args.procs}):
        for variant in ("pytorch", "dnngraph"):
            results[(variant, world)] = run(variant, world, args)
    for (variant, w), r in sorted(results.items()):
        if r[4]:
            print(f"{variant} x{w}: {r[4]}")
    world = args.procs
    plain, ours = results[("pytorch", world)][2], results[("dnngraph", world)][2]
    print(f"\nglobal loss ({world} processes) | step | pytorch | dnngraph | |difference| / pytorch")
    worst = 0.0
    for i, (a, b) in enumerate(zip(plain, ours)):
        step = min(20 * i, args.steps - 1)
        rel = abs(a - b) / max(abs(a), 1e-12)
        worst = max(worst, rel)
        print(f"  {step:5d} | {a:.6f} | {b:.6f} | {rel:.2e}")
    print(f"worst relative difference {worst:.2e}: {'PASS' if worst <= 0.01 else 'FAIL'} (within 1%)")
    print("\nmedian step ms | processes | pytorch | dnngraph | dnngraph / pytorch (speed)")
    for w in sorted({1, world}):
        p, d = results[("pytorch", w)][3], results[("dnngraph", w)][3]
        print(f"  {w} | {p * 1e3:.2f} | {d * 1e3:.2f} | {p / d:.2f}")
    if world > 1:
        for v in ("pytorch", "dnngraph"):
            one, many = results[(v, 1)][3], results[(v, world)][3]
            print(f"  {v}: {world} processes, {world}x the samples a step in {many / one:.2f}x the time "
                  f"(throughput scaling {world * one / many:.2f}x)")
    return 0 if worst <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
