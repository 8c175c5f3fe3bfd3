#include "engines/cuda/codegen/params.hpp"

#include <cstring>

namespace dnngraph::cuda::codegen {

uint64_t fast_div_magic(uint32_t d) {
  uint32_t shift = 0;
  while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
  const uint64_t magic = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
  return (magic & 0xffffffffu) | (uint64_t{shift} << 32);
}

void fill_params(const Layout& L, int vec, const std::vector<void*>& ptrs, const std::vector<float>& scalars,
                 void* workspace, PointwiseParams& p) {
  std::memset(&p, 0, sizeof(p));
  const int r = L.rank();
  p.vectors = L.volume / vec;
  for (int d = 0; d < r; ++d) {
    p.size[d] = L.dims[static_cast<size_t>(d)];
    p.div_by[d] = d == r - 1 ? p.size[d] / vec : p.size[d];
    if (p.div_by[d] > 0 && p.div_by[d] <= 0xffffffffLL) p.div_magic[d] = fast_div_magic(static_cast<uint32_t>(p.div_by[d]));
  }
  char* ws = static_cast<char*>(workspace);
  for (size_t k = 0; k < L.operands.size(); ++k) {
    const Operand& op = L.operands[k];
    for (int d = 0; d < r; ++d) p.stride[k][d] = op.strides[static_cast<size_t>(d)];
    p.ptr[k] = ptrs[static_cast<size_t>(op.tensor)];
  }
  for (size_t i = 0; i < L.reductions.size(); ++i) {
    const Reduction& red = L.reductions[i];
    p.out[i] = ptrs[static_cast<size_t>(red.tensor)];
    p.acc[i] = red.in_output ? static_cast<float*>(p.out[i])
               : red.acc_offset >= 0 ? reinterpret_cast<float*>(ws + red.acc_offset) : nullptr;
    if (red.operand >= 0) p.ptr[red.operand] = p.acc[i];
    p.acc_volume[i] = red.volume;
    p.inv_count[i] = static_cast<float>(red.inv_count);
  }
  if (L.partials_offset >= 0) p.partials = reinterpret_cast<float*>(ws + L.partials_offset);
  for (size_t s = 0; s < scalars.size() && s < static_cast<size_t>(kMaxScalars); ++s) p.scalar[s] = scalars[s];
}

}  // namespace dnngraph::cuda::codegen
