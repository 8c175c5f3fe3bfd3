#include "engines/cpu/pointwise/canonical_layout.hpp"

#include <algorithm>
#include <limits>
#include <set>

namespace dnngraph::cpu {
namespace {

using expr::InstrKind;

// Whether dims `outer` then `inner` (original numbering) are one run of memory in tensor t, or
// broadcast along both.
bool mergeable(const ir::Tensor& t, const std::vector<int64_t>& domain, int outer, int inner) {
  const bool bo = t.dims[static_cast<size_t>(outer)] == 1, bi = t.dims[static_cast<size_t>(inner)] == 1;
  if (bo || bi) return bo && bi;
  return t.strides[static_cast<size_t>(outer)] ==
         t.strides[static_cast<size_t>(inner)] * domain[static_cast<size_t>(inner)];
}

// Sort key of a dim: the primary tensor's stride, broadcast dims outermost.
int64_t order_key(const ir::Tensor& t, int d) {
  return t.dims[static_cast<size_t>(d)] == 1 ? std::numeric_limits<int64_t>::max() : t.strides[static_cast<size_t>(d)];
}

}  // namespace

const ir::Tensor& ProgramTensors::tensor(int id) const {
  auto it = std::lower_bound(copies_.begin(), copies_.end(), id, [](const ir::Tensor& t, int i) { return t.id < i; });
  return it != copies_.end() && it->id == id ? *it : graph_->tensor(id);
}

ir::Tensor& ProgramTensors::rewrite(int id) {
  auto it = std::lower_bound(copies_.begin(), copies_.end(), id, [](const ir::Tensor& t, int i) { return t.id < i; });
  if (it != copies_.end() && it->id == id) return *it;
  return *copies_.insert(it, graph_->tensor(id));
}

std::vector<int> program_tensors(const expr::Program& prog) {
  std::vector<int> out;
  for (const auto& in : prog.code) {
    const bool touches = in.kind == InstrKind::LOAD || in.kind == InstrKind::STORE || in.kind == InstrKind::REDUCE;
    if (touches && std::find(out.begin(), out.end(), in.tensor) == out.end()) out.push_back(in.tensor);
  }
  return out;
}

void canonicalize_domain(expr::Program& prog, ProgramTensors& g, int primary, int fixed,
                         const std::vector<int>& extra) {
  const std::vector<int64_t> domain = prog.domain;
  const int rank = static_cast<int>(domain.size());
  std::set<int> index_axes;
  for (const auto& in : prog.code)
    if (in.kind == InstrKind::INDEX) index_axes.insert(in.axis);

  // Order: the fixed dims, then the others by decreasing primary stride; size-1 dims dropped.
  std::vector<int> order;
  for (int d = 0; d < std::min(fixed, rank); ++d) order.push_back(d);
  std::vector<int> rest;
  for (int d = std::min(fixed, rank); d < rank; ++d)
    if (domain[static_cast<size_t>(d)] != 1 || index_axes.count(d)) rest.push_back(d);
  if (primary >= 0) {
    const ir::Tensor& p = g.tensor(primary);
    std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) { return order_key(p, a) > order_key(p, b); });
  }
  order.insert(order.end(), rest.begin(), rest.end());
  if (order.empty()) order.push_back(rank - 1);  // every dim is 1: keep one

  // Groups of neighbouring dims that merge in every tensor.
  std::vector<int> tensors = program_tensors(prog);
  for (int t : extra)
    if (t >= 0 && std::find(tensors.begin(), tensors.end(), t) == tensors.end()) tensors.push_back(t);
  std::vector<std::vector<int>> groups;
  for (size_t k = 0; k < order.size(); ++k) {
    const int d = order[k];
    // Fixed dims and INDEX axes stay alone.
    bool merge = static_cast<int>(k) >= fixed && static_cast<int>(groups.size()) > fixed && !index_axes.count(d) &&
                 !index_axes.count(groups.back().back());
    for (size_t i = 0; merge && i < tensors.size(); ++i)
      merge = mergeable(g.tensor(tensors[i]), domain, groups.back().back(), d);
    if (merge) groups.back().push_back(d);
    else groups.push_back({d});
  }

  // Rewrite the domain, every tensor and the INDEX axes.
  std::vector<int64_t> new_domain;
  for (const auto& grp : groups) {
    int64_t v = 1;
    for (int d : grp) v *= domain[static_cast<size_t>(d)];
    new_domain.push_back(v);
  }
  for (int id : tensors) {
    ir::Tensor& t = g.rewrite(id);
    std::vector<int64_t> dims, strides;
    for (size_t k = 0; k < groups.size(); ++k) {
      const int inner = groups[k].back();
      const bool broadcast = t.dims[static_cast<size_t>(inner)] == 1;
      dims.push_back(broadcast ? 1 : new_domain[k]);
      strides.push_back(t.strides[static_cast<size_t>(inner)]);
    }
    t.dims = std::move(dims);
    t.strides = std::move(strides);
  }
  for (auto& in : prog.code) {
    if (in.kind != InstrKind::INDEX) continue;
    for (size_t k = 0; k < groups.size(); ++k)
      if (groups[k].front() == in.axis) in.axis = static_cast<int>(k);
  }
  prog.domain = std::move(new_domain);
}

}  // namespace dnngraph::cpu
