// For `dnngraph info`: what the vendor engines' library searches found. It stands beside the
// registry, above the engine folders, since it reports on two of them.
#pragma once
#include <string>

namespace dnngraph {

// The cuDNN and cuBLASLt libraries found (version, path) or every path searched.
std::string describe_vendor_libraries();

}  // namespace dnngraph
