// The packed B of a plan whose B tensor is constant (TensorAttr::set_is_constant): packed on the
// first execute and kept by the plan, keyed by the tensor's pointer, so later executes skip the
// pack. A new pointer packs again (the last one is kept). Executes may run concurrently: each
// holds its own reference to the packed data it read, so a repack never frees it under them.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace dnngraph::cpu::gemm {

class ConstantB {
 public:
  // The packed form for `key` (floats of it, 64-byte aligned), made by pack(dst) when the key
  // differs from the one kept.
  struct Packed {
    std::shared_ptr<const std::vector<float>> owner;
    const float* data = nullptr;
  };
  Packed get(const void* key, int64_t floats, const std::function<void(float*)>& pack) const;
  // How many times get() has packed (a test's window on the contract).
  int64_t packs() const;

 private:
  mutable std::mutex mu_;
  mutable const void* key_ = nullptr;
  mutable Packed kept_;
  mutable int64_t packs_ = 0;
};

}  // namespace dnngraph::cpu::gemm
