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


def repeated_ms(torch, fn, reps=7):
    """Median milliseconds of one call, in repeats of ~20 ms of back-to-back calls, after a warm-up:
    for calls short enough that one event pair per call would time the launches."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    iters = max(3, min(200, int(20.0 / max(start.elapsed_time(stop), 1e-3))))
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / iters)
    times.sort()
    return times[len(times) // 2]
