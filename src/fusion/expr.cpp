#include "fusion/expr.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace dnngraph::expr {
namespace {


int64_t volume(const std::vector<int64_t>& d) {
  int64_t v = 1;
  for (int64_t x : d) v *= x;
  return v;
}

// Each dim equals the domain's or is 1.
bool broadcasts_to(const std::vector<int64_t>& dims, const std::vector<int64_t>& domain) {
  if (dims.size() != domain.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != domain[i] && dims[i] != 1) return false;
  return true;
}

// The domain: the anchor's output dims, else the largest pointwise output.
std::vector<int64_t> find_domain(const Partition& p, int anchor_node) {
  const ir::Graph& g = *p.graph;
  if (anchor_node >= 0) return g.tensor(g.nodes[static_cast<size_t>(anchor_node)].outputs[0]).dims;
  std::vector<int64_t> domain;
  for (int n : p.nodes) {
    const ir::Node& node = g.nodes[static_cast<size_t>(n)];
    if (!ir::is<PointwiseAttr>(node)) continue;
    const auto& d = g.tensor(node.outputs[0]).dims;
    if (domain.empty() || volume(d) > volume(domain)) domain = d;
  }
  return domain;
}

struct Lowering {
  const Partition& p;
  Program& prog;
  std::string& why;
  std::map<int, int> reg_of;  // tensor id -> register
  std::set<int> computed;     // tensors this program computes (not merely loads)

  const ir::Graph& g() const { return *p.graph; }
  int new_reg() { return prog.num_regs++; }

  bool operand(const ir::Node& node, int tensor, int& reg) {
    if (auto it = reg_of.find(tensor); it != reg_of.end()) {
      reg = it->second;
      return true;
    }
    const ir::Tensor& t = g().tensor(tensor);
    Instr in{};
    in.tensor = tensor;
    in.dst = reg = new_reg();
    if (t.is_pass_by_value) {
      in.kind = InstrKind::LOAD_SCALAR;
    } else if (broadcasts_to(t.dims, prog.domain)) {
      in.kind = InstrKind::LOAD;
      prog.loads.push_back(tensor);
    } else {
      why = "node '" + node.name + "', tensor '" + t.name + "': does not broadcast to the fused domain";
      return false;
    }
    prog.code.push_back(in);
    reg_of[tensor] = reg;
    return true;
  }

  bool pointwise(const ir::Node& node) {
    const auto& attr = std::get<PointwiseAttr>(node.attr);
    const ir::Tensor& out = g().tensor(node.outputs[0]);
    if (!broadcasts_to(out.dims, prog.domain)) {
      why = "node '" + node.name + "': its output does not broadcast to the fused domain";
      return false;
    }
    Instr in{};
    in.op = attr;
    if (attr.get_mode() == PointwiseMode::GEN_INDEX) {
      in.kind = InstrKind::INDEX;
      in.axis = static_cast<int>(attr.get_axis());
    } else {
      in.kind = InstrKind::APPLY;
      for (size_t i = 0; i < node.inputs.size() && i < 3; ++i)
        if (!operand(node, node.inputs[i], in.src[i])) return false;
    }
    in.dst = new_reg();
    in.tensor = node.outputs[0];
    if (out.is_virtual && out.dtype != DataType::FLOAT) in.round_to = out.dtype;
    prog.code.push_back(in);
    reg_of[node.outputs[0]] = in.dst;
    computed.insert(node.outputs[0]);
    return true;
  }

  bool reduction(const ir::Node& node) {
    auto it = reg_of.find(node.inputs[0]);
    const ir::Tensor& out = g().tensor(node.outputs[0]);
    if (it == reg_of.end()) {
      why = "node '" + node.name + "': a fused reduction must reduce a value computed in the partition";
      return false;
    }
    if (!broadcasts_to(out.dims, prog.domain)) {
      why = "node '" + node.name + "', tensor '" + out.name + "': reduced dims must be the domain's with 1s";
      return false;
    }
    Instr in{};
    in.kind = InstrKind::REDUCE;
    in.src[0] = it->second;
    in.tensor = node.outputs[0];
    in.reduce = std::get<ReductionAttr>(node.attr).get_mode();
    prog.code.push_back(in);
    prog.reductions.push_back(node.outputs[0]);
    return true;
  }

  // Genstats as two sums of the value it reads: SUM += x, SQ_SUM += x * x.
  bool genstats(const ir::Node& node) {
    auto it = reg_of.find(node.inputs[0]);
    if (it == reg_of.end()) {
      why = "node '" + node.name + "': a fused genstats must read a value computed in the partition";
      return false;
    }
    for (int t : node.outputs)
      if (!broadcasts_to(g().tensor(t).dims, prog.domain)) {
        why = "node '" + node.name + "', tensor '" + g().tensor(t).name + "': reduced dims must be the domain's with 1s";
        return false;
      }
    Instr square{};
    square.kind = InstrKind::APPLY;
    square.op = PointwiseAttr().set_mode(PointwiseMode::MUL);
    square.src[0] = square.src[1] = it->second;
    square.dst = new_reg();
    prog.code.push_back(square);
    const int value[2] = {it->second, square.dst};
    for (int k = 0; k < 2; ++k) {
      Instr in{};
      in.kind = InstrKind::REDUCE;
      in.src[0] = value[k];
      in.tensor = node.outputs[static_cast<size_t>(k)];
      in.reduce = ReductionMode::ADD;
      prog.code.push_back(in);
      prog.reductions.push_back(in.tensor);
    }
    return true;
  }

  bool stores() {
    for (int t : p.outputs) {
      auto it = reg_of.find(t);
      // Reductions store themselves; a tensor the program only loads is already in memory.
      if (it == reg_of.end() || !computed.count(t)) continue;
      if (g().tensor(t).dims != prog.domain) {
        why = "tensor '" + g().tensor(t).name + "': a stored result must span the whole fused domain";
        return false;
      }
      Instr in{};
      in.kind = InstrKind::STORE;
      in.src[0] = it->second;
      in.tensor = t;
      prog.code.push_back(in);
      prog.stores.push_back(t);
    }
    return true;
  }
};

}  // namespace

bool lower(const Partition& p, int anchor_node, Program& out, std::string& why_not) {
  out = Program{};
  out.anchor_node = anchor_node;
  out.domain = find_domain(p, anchor_node);
  if (out.domain.empty()) {
    why_not = "the partition has no pointwise op or anchor to iterate over";
    return false;
  }
  Lowering l{p, out, why_not, {}, {}};
  if (anchor_node >= 0) {
    out.anchor_output = p.graph->nodes[static_cast<size_t>(anchor_node)].outputs[0];
    Instr in{};
    in.kind = InstrKind::LOAD_ANCHOR;
    in.dst = l.new_reg();
    out.code.push_back(in);
    l.reg_of[out.anchor_output] = in.dst;
    l.computed.insert(out.anchor_output);
  }
  for (int n : p.nodes) {
    if (n == anchor_node) continue;
    const ir::Node& node = p.graph->nodes[static_cast<size_t>(n)];
    bool ok;
    if (ir::is<PointwiseAttr>(node)) ok = l.pointwise(node);
    else if (ir::is<ReductionAttr>(node)) ok = l.reduction(node);
    else if (ir::is<GenstatsAttr>(node)) ok = l.genstats(node);
    else {
      why_not = "node '" + node.name + "' (" + std::string(op_name(node.attr)) + ") cannot be part of a fused epilogue";
      ok = false;
    }
    if (!ok) return false;
  }
  return l.stores();
}

double reduction_identity(ReductionMode m) {
  switch (m) {
    case ReductionMode::MUL: return 1.0;
    case ReductionMode::MIN: return std::numeric_limits<double>::infinity();
    case ReductionMode::MAX: return -std::numeric_limits<double>::infinity();
    default: return 0.0;  // ADD, AVG, AMAX, NORM1, NORM2
  }
}

bool reduction_needs_finalize(ReductionMode m) { return m == ReductionMode::AVG || m == ReductionMode::NORM2; }

std::string Program::to_string() const {
  static const char* kKinds[] = {"load_anchor", "load", "load_scalar", "index", "apply", "store", "reduce"};
  std::ostringstream os;
  for (const auto& in : code) {
    os << kKinds[static_cast<int>(in.kind)];
    if (in.dst >= 0) os << " r" << in.dst;
    for (int s : in.src)
      if (s >= 0) os << " r" << s;
    if (in.kind == InstrKind::APPLY) os << " " << dnngraph::to_string(in.op.get_mode());
    if (in.kind == InstrKind::REDUCE) os << " " << dnngraph::to_string(in.reduce);
    if (in.tensor >= 0) os << " t" << in.tensor;
    os << "\n";
  }
  return os.str();
}

}  // namespace dnngraph::expr
