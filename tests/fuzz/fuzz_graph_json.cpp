// Graph::from_json on arbitrary text: a Status, never a crash. A graph it accepts is validated;
// a valid graph written back with to_json must read back to the same JSON, and is planned (the
// partitioner and every engine's check run on it).
#include <string>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dnngraph::Graph g;
  if (!dnngraph::Graph::from_json(text, g).ok()) return 0;
  if (!g.validate().ok()) return 0;
  const std::string written = g.to_json();
  dnngraph::Graph again;
  if (!dnngraph::Graph::from_json(written, again).ok()) __builtin_trap();
  if (!again.validate().ok() || again.to_json() != written) __builtin_trap();
  const dnngraph::Handle& handle = dnngraph::fuzz::fuzz_handle();
  if (g.build_operation_graph(handle).ok()) (void)g.create_execution_plans({dnngraph::HeurMode::A, dnngraph::HeurMode::FALLBACK});
  return 0;
}
