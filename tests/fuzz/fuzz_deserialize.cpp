// Graph::deserialize on arbitrary bytes: a Status, never a crash, a leak or undefined behaviour.
// Each input is tried as given (almost always stopped by the checksum) and with its last 8 bytes
// replaced by the right checksum, so mutations reach the parser, the graph reader and the planner.
#include <cstring>

#include "core/hash.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const dnngraph::Handle& handle = dnngraph::fuzz::fuzz_handle();
  std::vector<uint8_t> bytes(data, data + size);
  {
    dnngraph::Graph g;
    (void)g.deserialize(handle, bytes);
  }
  if (bytes.size() >= 8) {
    const uint64_t sum = dnngraph::hash64(bytes.data(), bytes.size() - 8);
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
    dnngraph::Graph g;
    if (g.deserialize(handle, bytes).ok()) {
      // A plan that reloads must serialize again (it is a complete, built graph).
      std::vector<uint8_t> again;
      if (!g.serialize(again).ok()) __builtin_trap();
    }
  }
  return 0;
}
