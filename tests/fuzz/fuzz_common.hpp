// What the fuzz targets and the seed writer share: a CPU handle with a fixed device signature, so
// that seeds written on one machine reach past the device check on another.
#pragma once
#include "dnngraph/dnngraph.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph::fuzz {

inline const Handle& fuzz_handle() {
  static const Handle handle = [] {
    Handle h(Device::cpu());
    h.set_num_threads(1);
    impl_of(h).info.signature = "cpu:fuzz";
    return h;
  }();
  return handle;
}

}  // namespace dnngraph::fuzz
