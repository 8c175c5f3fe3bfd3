#include "engines/cpu/pointwise/fused_program.hpp"

#include <algorithm>

#include "engines/cpu/pointwise/canonical_layout.hpp"

namespace dnngraph::cpu {
namespace {

using expr::InstrKind;

// Types whose every value fp32 represents exactly.
bool fp32_exact(DataType t) {
  switch (t) {
    case DataType::FLOAT: case DataType::HALF: case DataType::BFLOAT16: case DataType::FP8_E4M3:
    case DataType::FP8_E5M2: case DataType::INT8: case DataType::UINT8: case DataType::BOOLEAN:
      return true;
    default: return false;
  }
}

std::string type_rule(DataType t) {
  return "data type " + std::string(to_string(t)) +
         " is not supported (fp32 arithmetic; FLOAT, HALF, BFLOAT16, FP8, INT8, UINT8 and BOOLEAN are)";
}

// Ranges per task below this many elements cost more in hand-off than they save.
constexpr int64_t kMinElementsPerTask = int64_t{1} << 14;
constexpr int kMaxRank = 12;  // the epilogue executor's limit

}  // namespace

bool check_program_types(const expr::Program& prog, const Partition& p, std::string& why) {
  const ir::Graph& g = *p.graph;
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const ir::Node& n = p.node(k);
    if (n.compute_type == DataType::DOUBLE || n.compute_type == DataType::INT64 || n.compute_type == DataType::INT32) {
      why = "node '" + n.name + "': compute type " + std::string(to_string(n.compute_type)) +
            " is not supported (fp32 arithmetic)";
      return false;
    }
  }
  for (const auto& in : prog.code) {
    const bool touches = in.kind == InstrKind::LOAD || in.kind == InstrKind::STORE || in.kind == InstrKind::REDUCE;
    if (touches && !fp32_exact(g.tensor(in.tensor).dtype)) {
      why = "tensor '" + g.tensor(in.tensor).name + "': " + type_rule(g.tensor(in.tensor).dtype);
      return false;
    }
    if (in.kind == InstrKind::APPLY && in.round_to != DataType::NOT_SET && !fp32_exact(in.round_to)) {
      why = "tensor '" + g.tensor(in.tensor).name + "' (intermediate): " + type_rule(in.round_to);
      return false;
    }
  }
  return true;
}

int primary_tensor(const expr::Program& prog, const ir::Graph& g) {
  if (!prog.stores.empty()) return prog.stores.front();
  for (const auto& in : prog.code)
    if (in.kind == InstrKind::LOAD && g.tensor(in.tensor).dims == prog.domain) return in.tensor;
  return -1;
}

bool compile_program(expr::Program prog, ProgramTensors tensors, int primary, int fixed, FusedProgram& out,
                     std::string& why, const std::vector<int>& extra) {
  out.tensors = std::move(tensors);
  canonicalize_domain(prog, out.tensors, primary, fixed, extra);
  if (static_cast<int>(prog.domain.size()) > kMaxRank) {
    why = "the fused domain has rank " + std::to_string(prog.domain.size()) +
          " after merging contiguous dims (up to 12 is supported)";
    return false;
  }
  return out.epi.init(prog, [&](int id) -> const ir::Tensor& { return out.tensors.tensor(id); }, why);
}

Status run_domain(const Epilogue& e, const std::vector<void*>& ptrs, ThreadPool& pool) {
  const auto& dims = e.domain();
  int64_t volume = 1;
  for (int64_t d : dims) volume *= d;
  if (volume == 0) return {};
  const int tasks = static_cast<int>(std::clamp<int64_t>(volume / kMinElementsPerTask, 1, pool.size()));
  EpilogueRun run(e, ptrs, tasks);
  const int rank = e.rank();
  pool.parallel_for(tasks, [&](int64_t b, int64_t end) {
    for (int64_t i = b; i < end; ++i) {
      const int64_t lo = volume / tasks * i + std::min<int64_t>(i, volume % tasks);
      const int64_t hi = lo + volume / tasks + (i < volume % tasks ? 1 : 0);
      int64_t coord[kMaxRank];
      int64_t rest = lo;
      for (int d = rank; d-- > 0;) {
        coord[d] = rest % dims[static_cast<size_t>(d)];
        rest /= dims[static_cast<size_t>(d)];
      }
      run.strip(static_cast<int>(i), coord, rank - 1, hi - lo, 1, nullptr);
    }
  });
  return run.finish();
}

}  // namespace dnngraph::cpu
