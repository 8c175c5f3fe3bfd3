// Compiling, loading, serializing and reloading the one kernel (plus the reduction finalizer) a
// GEMM, convolution or attention plan runs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "planning/engine.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cuda {

struct KernelBuild {
  std::string source;
  std::vector<uint8_t> cubin;
  std::shared_ptr<Module> module;
  CUfunction main = nullptr;
  CUfunction finalize = nullptr;  // when the epilogue has reductions to finish
};

// Compiles `source` (through the target's kernel cache) and loads it; `kernel` is the main entry,
// allowed `smem_bytes` of dynamic shared memory.
Status compile_kernel(const Target& t, const std::string& program_name, const char* kernel, int smem_bytes,
                      bool has_finalize, KernelBuild& k);
// Reads a serialized plan's kernel payload (serialize_kernel's form) into k.cubin, after checking
// it was built from k.source; names `engine` in errors.
Status read_kernel(ByteReader& r, std::string_view engine, KernelBuild& k);
// read_kernel, then loads k.cubin.
Status reload_kernel(const Target& t, ByteReader& r, const char* kernel, int smem_bytes, bool has_finalize,
                     std::string_view engine, KernelBuild& k);
void serialize_kernel(const KernelBuild& k, ByteWriter& w);
// What an engine's build() and deserialize() do with k.source: compile_kernel (r null; the
// program is named "<engine>.cu") or reload_kernel from r.
Status compile_or_reload(const Target& t, ByteReader* r, std::string_view engine, const char* kernel, int smem_bytes,
                         bool has_finalize, KernelBuild& k);

// A plan that runs one compiled module over a partition; its payload is the kernel.
class KernelPlan : public Plan {
 public:
  KernelPlan(const Partition& p, KernelBuild k) : part_(p), k_(std::move(k)) {}
  void serialize(ByteWriter& w) const override { serialize_kernel(k_, w); }

 protected:
  Partition part_;
  KernelBuild k_;
};

}  // namespace dnngraph::cuda
