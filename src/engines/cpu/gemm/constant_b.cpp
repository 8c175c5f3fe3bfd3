#include "engines/cpu/gemm/constant_b.hpp"

namespace dnngraph::cpu::gemm {

ConstantB::Packed ConstantB::get(const void* key, int64_t floats, const std::function<void(float*)>& pack) const {
  std::lock_guard<std::mutex> lock(mu_);  // one pack per key, even when executes race for it
  if (kept_.data && key_ == key) return kept_;
  auto buf = std::make_shared<std::vector<float>>(static_cast<size_t>(floats) + 16);
  float* aligned = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf->data()) + 63) & ~uintptr_t{63});
  pack(aligned);
  kept_ = {std::move(buf), aligned};
  key_ = key;
  ++packs_;
  return kept_;
}

int64_t ConstantB::packs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return packs_;
}

}  // namespace dnngraph::cpu::gemm
