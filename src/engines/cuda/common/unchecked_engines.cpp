#include "engines/cuda/common/unchecked_engines.hpp"

#include <cstdlib>

namespace dnngraph::cuda {

bool unchecked_engine_allowed(std::string_view engine, std::string& why_not) {
  const char* listed = std::getenv("DNNGRAPH_UNCHECKED_ENGINES");
  std::string_view rest = listed ? listed : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == engine) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  why_not = std::string(engine) +
            "'s kernels have not yet run against ref on a GPU, so it is not offered (DNNGRAPH_UNCHECKED_ENGINES=" +
            std::string(engine) + " lets the GPU tests reach it)";
  return false;
}

}  // namespace dnngraph::cuda
