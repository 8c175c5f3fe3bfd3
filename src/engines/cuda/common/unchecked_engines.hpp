// An own CUDA engine whose kernels have not yet run against ref on a GPU is not offered: check()
// says so, unless DNNGRAPH_UNCHECKED_ENGINES (comma-separated engine names) names it, which is
// how the GPU tests reach it before it is trusted. An engine's gate goes once its GPU tests pass.
#pragma once
#include <string>
#include <string_view>

namespace dnngraph::cuda {

// True when `engine` may be offered; false with `why_not` while its kernels are unchecked.
bool unchecked_engine_allowed(std::string_view engine, std::string& why_not);

}  // namespace dnngraph::cuda
