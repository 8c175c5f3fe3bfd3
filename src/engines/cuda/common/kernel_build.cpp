#include "engines/cuda/common/kernel_build.hpp"

#include "core/hash.hpp"
#include "runtime/cuda/driver_ext.hpp"
#include "engines/cuda/common/epilogue_layout.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"

namespace dnngraph::cuda {
namespace {

constexpr uint32_t kPayloadVersion = 1;

Status load(const Target& t, const char* kernel, int smem_bytes, bool has_finalize, KernelBuild& k) {
  if (auto s = Module::load(*t.handle, k.cubin, k.module); !s.ok()) return s;
  if (auto s = k.module->function(kernel, k.main); !s.ok()) return s;
  // Always raised: 48 KB of dynamic shared memory plus the epilogue's static scratch exceeds the
  // default limit (a launch then fails with CUDA_ERROR_INVALID_VALUE).
  if (auto s = set_dynamic_smem(k.main, smem_bytes, kernel); !s.ok()) return s;
  if (has_finalize) return k.module->function(kEpilogueFinalizeKernel, k.finalize);
  return {};
}

}  // namespace

Status compile_kernel(const Target& t, const std::string& program_name, const char* kernel, int smem_bytes,
                      bool has_finalize, KernelBuild& k) {
  if (auto s = compile_cached(t, k.source, program_name, k.cubin); !s.ok()) return s;
  return load(t, kernel, smem_bytes, has_finalize, k);
}

Status read_kernel(ByteReader& r, std::string_view engine, KernelBuild& k) {
  const auto version = r.get<uint32_t>();
  const auto source_hash = r.get<uint64_t>();
  if (!r.get_bytes(k.cubin, size_t{1} << 30) || version != kPayloadVersion)
    return {ErrorCode::SERIALIZATION_FAILED, std::string(engine) + ": the plan payload is truncated or of another version"};
  if (source_hash != hash64(k.source))
    return {ErrorCode::SERIALIZATION_FAILED, std::string(engine) +
                                                 ": the stored kernel was generated from other source (another library "
                                                 "version or device); rebuild the plan"};
  return {};
}

Status reload_kernel(const Target& t, ByteReader& r, const char* kernel, int smem_bytes, bool has_finalize,
                     std::string_view engine, KernelBuild& k) {
  if (auto s = read_kernel(r, engine, k); !s.ok()) return s;
  return load(t, kernel, smem_bytes, has_finalize, k);
}

Status compile_or_reload(const Target& t, ByteReader* r, std::string_view engine, const char* kernel, int smem_bytes,
                         bool has_finalize, KernelBuild& k) {
  if (r) return reload_kernel(t, *r, kernel, smem_bytes, has_finalize, engine, k);
  return compile_kernel(t, std::string(engine) + ".cu", kernel, smem_bytes, has_finalize, k);
}

void serialize_kernel(const KernelBuild& k, ByteWriter& w) {
  w.put(kPayloadVersion);
  w.put(hash64(k.source));
  w.put_bytes(k.cubin.data(), k.cubin.size());
}

}  // namespace dnngraph::cuda
