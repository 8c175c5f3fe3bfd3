#include "planning/parallel_build.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace dnngraph {

unsigned build_threads() {
  if (const char* v = std::getenv("DNNGRAPH_BUILD_THREADS")) {
    const long n = std::strtol(v, nullptr, 10);
    if (n > 0) return static_cast<unsigned>(std::min<long>(n, 1024));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void run_concurrently(size_t n, const std::function<void(size_t)>& task, unsigned threads) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  // Each thread takes the next index until none is left: compile times differ by 100x, so a
  // static split would leave threads idle behind one GEMM kernel.
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t helpers = std::min<size_t>(n, std::max(1u, threads)) - (n > 0 ? 1 : 0);
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  try {
    for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started (and the caller) do the rest.
  }
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dnngraph
