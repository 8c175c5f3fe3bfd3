#include "engines/vendor_libraries.hpp"

#include <sstream>

#include "engines/cublaslt/cublaslt_api.hpp"
#include "engines/cudnn/cudnn_api.hpp"

namespace dnngraph {
namespace {

// cudnnGetVersion and cublasLtGetVersion both count major * 10000 + minor * 100 + patch.
std::string dotted(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

void describe(std::ostringstream& os, const char* title, const vendor::LibraryReport& r) {
  os << title << ":\n";
  for (const auto& line : r.searched) os << "  searched " << line << "\n";
  if (r.ok) os << "  using " << r.path << " (" << title << " " << dotted(r.version) << ")\n";
  else os << "  not usable: " << r.error << "\n  (dnngraph's own engines serve)\n";
}

}  // namespace

std::string describe_vendor_libraries() {
  std::ostringstream os;
  describe(os, "cuDNN", cudnn::library_report());
  describe(os, "cuBLASLt", cublaslt::library_report());
  return os.str();
}

}  // namespace dnngraph
