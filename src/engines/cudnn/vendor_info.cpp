// describe_vendor_libraries(): what `dnngraph info` says about cuDNN and cuBLASLt.
#include <sstream>

#include "engines/cublaslt/cublaslt_api.hpp"
#include "engines/cudnn/cudnn_api.hpp"
#include "engines/cudnn/cudnn_engine.hpp"

namespace dnngraph {
namespace {

std::string dotted(size_t v, size_t major_div, size_t minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v / minor_div % 100) + "." + std::to_string(v % minor_div);
}

void describe(std::ostringstream& os, const char* title, bool found, const std::string& version,
              const std::string& path, const std::vector<std::string>& searched, const std::string& error) {
  os << title << ":\n";
  for (const auto& line : searched) os << "  searched " << line << "\n";
  if (found) os << "  using " << path << " (" << version << ")\n";
  else os << "  not usable: " << error << "\n  (dnngraph's own engines serve)\n";
}

}  // namespace

std::string describe_vendor_libraries() {
  std::ostringstream os;
  const bool dnn = cudnn::api() != nullptr;
  // cudnnGetVersion: major*10000 + minor*100 + patch; cublasLtGetVersion: major*10000 + minor*100 + patch.
  describe(os, "cuDNN", dnn, dnn ? "cuDNN " + dotted(cudnn::version(), 10000, 100) : "", cudnn::path(),
           cudnn::search_log(), cudnn::error());
  const bool lt = cublaslt::api() != nullptr;
  describe(os, "cuBLASLt", lt, lt ? "cuBLASLt " + dotted(cublaslt::version(), 10000, 100) : "", cublaslt::path(),
           cublaslt::search_log(), cublaslt::error());
  return os.str();
}

}  // namespace dnngraph
