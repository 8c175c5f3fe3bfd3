// The reference engine: runs each node of a partition with plain loops, in double.
// On a GPU handle it stages the partition's inputs through host memory.
#include "engines/ref/ref_engine.hpp"

#include <algorithm>
#include <cstring>

#include "engines/ref/ops.hpp"
#include "runtime/memory.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::ref {
namespace {

View view_of(const ir::Tensor& t, void* data) { return View{t.dtype, t.dims, t.strides, data}; }

// Copies the elements t's dims and strides address, and nothing in their gaps (another tensor
// may live there: x2 between the rows of x1).
void copy_elements(const ir::Tensor& t, const void* src, void* dst) {
  const size_t bytes = static_cast<size_t>(size_of(t.dtype));
  for_each_index(t.dims, [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * t.strides[i];
    std::memcpy(static_cast<char*>(dst) + off * static_cast<int64_t>(bytes),
                static_cast<const char*>(src) + off * static_cast<int64_t>(bytes), bytes);
  });
}

// Whether output `out`'s memory overlaps an input's: the nodes run one after the other, so such an
// output (the frontend's apply_rope stores Y1 over x1, which a later node still reads) is computed
// into host storage and copied out after the last node, as every input is read by then.
bool overlaps_an_input(const Partition& p, const std::vector<void*>& ptrs, int out) {
  const ir::Tensor& o = p.tensor(out);
  const auto* lo = static_cast<const unsigned char*>(ptrs[static_cast<size_t>(out)]);
  if (!lo) return false;
  const auto* hi = lo + o.span_bytes();
  for (int id : p.inputs) {
    const ir::Tensor& t = p.tensor(id);
    const auto* a = static_cast<const unsigned char*>(ptrs[static_cast<size_t>(id)]);
    if (t.is_pass_by_value || !a) continue;
    if (a < hi && lo < a + t.span_bytes()) return true;
  }
  return false;
}

class RefPlan final : public Plan {
 public:
  explicit RefPlan(const Partition& p) : part_(p) {}

  Status execute(const ExecArgs& args) const override {
    const ir::Graph& g = *part_.graph;
    HandleImpl& h = args.handle;
    const bool staged = h.device.is_cuda();
    // Host memory for every tensor the partition touches that is not already on the host, and
    // for host outputs written over an input.
    std::vector<std::vector<unsigned char>> storage(g.tensors.size());
    std::vector<void*> host(g.tensors.size(), nullptr);
    std::vector<int> copied_out;
    if (!staged)
      for (int id : part_.outputs)
        if (overlaps_an_input(part_, args.ptrs, id)) copied_out.push_back(id);
    auto host_ptr = [&](int id) -> void* {
      const size_t i = static_cast<size_t>(id);
      if (host[i]) return host[i];
      const ir::Tensor& t = g.tensor(id);
      if (t.is_pass_by_value) return host[i] = args.ptrs[i];  // scalars are host pointers already
      const bool aliased = std::find(copied_out.begin(), copied_out.end(), id) != copied_out.end();
      if (!staged && args.ptrs[i] && !aliased) return host[i] = args.ptrs[i];
      storage[i].assign(static_cast<size_t>(t.span_bytes()), 0);
      return host[i] = storage[i].data();
    };
    if (staged) {
      // Outputs too: what a node leaves alone (a ragged output's padded rows) goes back unchanged.
      std::vector<int> staged_in(part_.inputs);
      staged_in.insert(staged_in.end(), part_.outputs.begin(), part_.outputs.end());
      for (int id : staged_in) {
        const ir::Tensor& t = g.tensor(id);
        if (t.is_pass_by_value || !args.ptrs[static_cast<size_t>(id)]) continue;
        if (auto s = memory::copy_to_host(h, host_ptr(id), args.ptrs[static_cast<size_t>(id)],
                                          static_cast<size_t>(t.span_bytes()));
            !s.ok())
          return s;
      }
    }
    for (size_t k = 0; k < part_.nodes.size(); ++k) {
      const ir::Node& n = part_.node(k);
      NodeArgs na{g, n, {}, {}, h.thread_pool()};
      for (int id : n.inputs) na.in.push_back(id < 0 ? View{} : view_of(g.tensor(id), host_ptr(id)));
      for (int id : n.outputs) na.out.push_back(view_of(g.tensor(id), host_ptr(id)));
      Status s = std::visit([&](const auto& attr) { return run(attr, na); }, n.attr);
      if (!s.ok()) return {s.code(), "ref: node '" + n.name + "': " + s.message()};
    }
    for (int id : copied_out) copy_elements(g.tensor(id), host_ptr(id), args.ptrs[static_cast<size_t>(id)]);
    if (staged)
      for (int id : part_.outputs)
        if (auto s = copy_back(h, g.tensor(id), host_ptr(id), args.ptrs[static_cast<size_t>(id)]); !s.ok()) return s;
    return {};
  }

 private:
  // Only the output's own elements go back: its span's gaps may hold other outputs of the node
  // (dQ, dK and dV interleaved in one buffer), already copied back, so the span is read afresh.
  static Status copy_back(HandleImpl& h, const ir::Tensor& t, const void* host_data, void* device) {
    const size_t bytes = static_cast<size_t>(t.span_bytes());
    std::vector<unsigned char> merged(bytes);
    if (auto s = memory::copy_to_host(h, merged.data(), device, bytes); !s.ok()) return s;
    copy_elements(t, host_data, merged.data());
    return memory::copy_to_device(h, device, merged.data(), bytes);
  }

  Partition part_;
};

class RefEngine final : public Engine {
 public:
  std::string_view name() const override { return "ref"; }
  Support check(const Partition&, const Target&) const override { return Support::yes(); }
  // An output over an input is computed aside and copied out after the last node (RefPlan).
  Alias output_alias(const Partition&, const Knobs&, int, int) const override { return Alias::SAFE; }
  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // Scalar double loops on one core: a few hundred MFLOP/s.
    return partition_flops(p) / 3e8 + partition_bytes(p) / 1e9 + (t.device().is_cuda() ? 1e-3 : 0.0);
  }
  Status build(const Partition& p, const Target&, const Knobs&, std::unique_ptr<Plan>& plan) const override {
    plan = std::make_unique<RefPlan>(p);
    return {};
  }
};

}  // namespace

const Engine& engine() { return engine_instance<RefEngine>(); }

}  // namespace dnngraph::ref
