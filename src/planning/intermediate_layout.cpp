// Where the intermediates between partitions live in the workspace. Partitions run one after
// another in list order, so a value is live from the partition that writes it to the last one that
// reads it, and values whose live ranges do not meet share bytes. Before, every intermediate had
// bytes of its own: ResNet-50 N1 took 46 MB of them, and each layer wrote its output to memory no
// layer had touched since the previous forward (cold in every cache). Shared: 8.8 MB, and on a
// 2-core Xeon ResNet-50 ran 3.7% and MobileNetV2 11% faster in process (docs/perf.md, 2026-12-06).
#include <algorithm>
#include <utility>

#include "core/checked.hpp"
#include "planning/engine.hpp"
#include "planning/plan_build.hpp"

namespace dnngraph {
namespace {

struct LiveRange {
  int64_t bytes = 0;   // 256-byte aligned
  size_t first = 0;    // the partition that writes it
  size_t last = 0;     // the last partition that reads it (first, if none does)
  int64_t offset = 0;  // placed here
  bool meets(const LiveRange& o) const { return first <= o.last && o.first <= last; }
};

// The last partition that reads each tensor, or -1.
std::vector<int64_t> last_readers(const PlanSet& ps, const ir::Graph& g) {
  std::vector<int64_t> last(g.tensors.size(), -1);
  for (size_t i = 0; i < ps.parts.size(); ++i)
    for (int t : ps.parts[i].partition.inputs) last[static_cast<size_t>(t)] = static_cast<int64_t>(i);
  return last;
}

// Whether output `out` of pp may take the bytes of its input `in`, which nothing later reads: the
// same layout, and every candidate's engine keeps it correct (Engine::output_alias), the first at no cost.
bool may_alias(const PartitionPlans& pp, const ir::Graph& g, int out, int in) {
  const ir::Tensor &o = g.tensor(out), &x = g.tensor(in);
  if (!x.is_virtual || o.dtype != x.dtype || o.dims != x.dims || o.strides != x.strides || pp.candidates.empty())
    return false;
  for (size_t k = 0; k < pp.candidates.size(); ++k) {
    const Engine* e = engine_by_id(pp.candidates[k].engine_id);
    const Engine::Alias a = e ? e->output_alias(pp.partition, pp.candidates[k].knobs, out, in) : Engine::Alias::NO;
    if (a == Engine::Alias::NO || (k == 0 && a != Engine::Alias::FAST)) return false;
  }
  return true;
}

// The cross-partition intermediates' live ranges, an output that takes its input's bytes joining
// the input's range; range_of[t] is tensor t's range, or -1.
std::vector<LiveRange> live_ranges(const PlanSet& ps, const ir::Graph& g, std::vector<int>& range_of) {
  const std::vector<int64_t> last_read = last_readers(ps, g);
  range_of.assign(g.tensors.size(), -1);
  std::vector<LiveRange> out;
  for (size_t i = 0; i < ps.parts.size(); ++i) {
    const Partition& part = ps.parts[i].partition;
    for (int t : part.inputs)
      if (int r = range_of[static_cast<size_t>(t)]; r >= 0) out[static_cast<size_t>(r)].last = i;
    std::vector<int> taken;  // inputs already given to an output of this partition
    for (int t : part.outputs) {
      const auto& x = g.tensor(t);
      if (!x.is_virtual || range_of[static_cast<size_t>(t)] >= 0) continue;
      for (int in : part.inputs)
        if (range_of[static_cast<size_t>(in)] >= 0 && last_read[static_cast<size_t>(in)] == static_cast<int64_t>(i) &&
            std::find(taken.begin(), taken.end(), in) == taken.end() && may_alias(ps.parts[i], g, t, in)) {
          range_of[static_cast<size_t>(t)] = range_of[static_cast<size_t>(in)];
          taken.push_back(in);
          break;
        }
      if (range_of[static_cast<size_t>(t)] >= 0) continue;
      range_of[static_cast<size_t>(t)] = static_cast<int>(out.size());
      // Spans are at most 2^48 bytes (validation), so rounding up cannot overflow.
      out.push_back(LiveRange{(x.span_bytes() + 255) / 256 * 256, i, i, 0});
    }
  }
  return out;
}

}  // namespace

// Each value at the lowest offset where it meets no value placed before it (first fit), largest
// first (ties: written earlier): a network's few large activations are packed before the many
// small ones fill the gaps.
void layout_intermediates(PlanSet& ps, const ir::Graph& g) {
  ps.workspace_offset.assign(g.tensors.size(), -1);
  ps.intermediates_bytes = 0;
  std::vector<int> range_of;
  std::vector<LiveRange> ranges = live_ranges(ps, g, range_of);
  std::vector<size_t> order(ranges.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a].bytes > ranges[b].bytes; });
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of the placed values it meets
  for (size_t k = 0; k < order.size(); ++k) {
    LiveRange& v = ranges[order[k]];
    busy.clear();
    for (size_t j = 0; j < k; ++j)
      if (const LiveRange& o = ranges[order[j]]; o.meets(v)) busy.emplace_back(o.offset, o.offset + o.bytes);
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0, end = 0;
    for (const auto& [lo, hi] : busy) {
      if (v.bytes <= lo - offset) break;
      offset = std::max(offset, hi);
    }
    if (!checked::add(offset, v.bytes, end)) end = INT64_MAX;  // a workspace no one can allocate
    v.offset = offset;
    ps.intermediates_bytes = std::max(ps.intermediates_bytes, end);
  }
  for (size_t t = 0; t < range_of.size(); ++t)
    if (range_of[t] >= 0) ps.workspace_offset[t] = ranges[static_cast<size_t>(range_of[t])].offset;
}

}  // namespace dnngraph
