// Lowering a partition to cuDNN backend descriptors: one tensor descriptor per tensor the
// partition touches (uid = IR tensor id + 1; virtual when internal to the partition), one
// operation descriptor per node (conv_fprop/dgrad/wgrad, matmul, pointwise, reduction; an sdpa
// node becomes the operation graph of sdpa_lower.hpp, with by-value constants of its own). The
// lowering needs no GPU and no handle; the operation graph (which does) is built in op_graph.hpp.
#pragma once
#include <string>
#include <vector>

#include "engines/cudnn/descriptor.hpp"
#include "fusion/partition.hpp"

namespace dnngraph::cudnn {

// Byte alignment declared for every non-virtual tensor; execute() checks pointers against it.
inline constexpr int64_t kAlignment = 16;

// How one IR tensor appears in the cuDNN graph. cuDNN wants rank >= 3 (matmul: a batch dim) and
// 2D+ convolutions, so a 1D convolution's tensors get a unit H dim, matmul/pointwise tensors
// leading unit dims, and pass-by-value scalars all-unit dims of the partition's rank.
struct TensorPlan {
  int id = -1;
  int64_t uid = 0;
  std::vector<int64_t> dims, strides;
  Dtype dtype = Dtype::FLOAT;
  bool is_virtual = false;
  bool by_value = false;
  uint64_t value = 0;  // a constant of the lowering (id < 0, by value): its bits
};

// The variant pack's shape: which IR tensors get pointers, under which uids.
struct PackLayout {
  std::vector<int> ids;        // IR tensor ids (partition inputs and outputs)
  std::vector<int64_t> uids;   // parallel to ids
  std::vector<bool> by_value;  // host scalars: no alignment rule
  std::vector<uint64_t> constants;  // parallel to ids: a lowering constant's bits where the id is < 0
};

// The partition's tensors and operations as finalized descriptors.
struct Lowered {
  std::vector<TensorPlan> tensors;
  DescriptorList descriptors;  // everything created, kept alive with the graph
  std::vector<BackendDescriptor> ops;
  PackLayout pack;
};

// "" when every node has a cuDNN lowering, else why not (naming the node and the rule).
std::string lowering_gap(const Partition& p);
// lowering_gap, then what the engine offers: a conv_fprop or matmul on HALF, BFLOAT16 or FLOAT
// (not a FLOAT matmul) with a pointwise epilogue, or an sdpa node (sdpa_unsupported_reason), the
// graphs checked against ref on a GPU (see lower.cpp for what is lowered but held back, and
// why). "" when offered.
std::string unsupported_reason(const Partition& p);
// The IR data type as cuDNN's; false for NOT_SET.
bool to_cudnn(DataType t, Dtype& out);
// Tensor plans for every tensor the partition touches, in first-use order (no cuDNN calls).
Status plan_tensors(const Partition& p, std::vector<TensorPlan>& out);
PackLayout pack_layout(const std::vector<TensorPlan>& tensors);
// Creates and finalizes every tensor and operation descriptor through `api`.
Status lower_partition(const CudnnApi& api, const Partition& p, Lowered& out);

}  // namespace dnngraph::cudnn
