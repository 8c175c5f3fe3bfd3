// Building plans concurrently: NVRTC compiles take 26 ms (one ReLU) to several seconds (a GEMM or
// convolution kernel) each and run on the CPU, so build_plans(ALL), and `dnngraph tune` through it,
// compile their candidates on a pool of their own, sized by the machine (not the CPU engines' pool:
// its workers run kernels, and a compile waits on no memory bandwidth, only on a core).
#pragma once
#include <cstddef>
#include <functional>

namespace dnngraph {

// Threads for concurrent builds: DNNGRAPH_BUILD_THREADS when set to a positive number, else the
// hardware concurrency (at least 1).
unsigned build_threads();

// Runs task(0) .. task(n - 1), each exactly once, on up to `threads` threads (the caller is one of
// them; n <= 1 or threads <= 1 runs them in order on the caller). Tasks write their results to
// slots of their own, so the results do not depend on which thread ran what. When tasks throw,
// every other task still runs, and the exception of the lowest index is rethrown on the caller.
void run_concurrently(size_t n, const std::function<void(size_t)>& task, unsigned threads = build_threads());

}  // namespace dnngraph
