"""How the GPU benchmarks time PyTorch: CUDA events around each call, the median in ms."""


def median_ms(torch, fn, repeats):
    """Three warm-up calls, then the median of `repeats` timed calls of `fn`, in milliseconds."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    ms.sort()
    return ms[len(ms) // 2]
