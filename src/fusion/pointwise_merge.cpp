// Horizontal fusion of pure pointwise partitions. The greedy partitioner grows a partition through
// consumers, so two chains that read the same inputs (apply_rope's two halves: Y1 = x1*cos1 -
// x2*sin1, Y2 = x2*cos2 + x1*sin2) land in partitions of their own. Run one after the other they
// are correct, unless an output is written over an input (the frontend's test_apply_rope stores Y1
// into x1 and Y2 into x2): then the second reads what the first wrote. One fused loop reads every
// input of an element before it stores any output, as cuDNN's one kernel does; and one pass over
// memory instead of several is what fusion is for anyway.
#include <algorithm>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "fusion/partition.hpp"

namespace dnngraph {
namespace {

// A merged partition is one loop (one kernel) with a load or store per tensor: past this many
// nodes a group is left as it is rather than asking the engines for an unbounded kernel.
constexpr size_t kMaxMergedNodes = 256;

// The dims every node of `p` writes, when p is pointwise alone (no anchor, no reduction) and they
// agree: the fused loop's domain. Empty otherwise.
std::vector<int64_t> pointwise_domain(const Partition& p) {
  if (p.anchor >= 0 || p.pattern != "pointwise_chain") return {};
  std::vector<int64_t> dims;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    if (!ir::is<PointwiseAttr>(n) || n.outputs.size() != 1) return {};
    const auto& d = p.tensor(n.outputs[0]).dims;
    if (i == 0) dims = d;
    else if (d != dims) return {};
  }
  return dims;
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int a) { return parent[static_cast<size_t>(a)] == a ? a : parent[static_cast<size_t>(a)] = find(parent[static_cast<size_t>(a)]); }
  void join(int a, int b) { parent[static_cast<size_t>(find(a))] = find(b); }
};

// succ[a]: the partitions that read an output of partition a.
std::vector<std::vector<int>> successors(const ir::Graph& g, const std::vector<Partition>& parts,
                                         const std::vector<int>& part_of_node) {
  std::vector<std::vector<int>> succ(parts.size());
  for (size_t a = 0; a < parts.size(); ++a) {
    for (int t : parts[a].outputs)
      for (int c : g.consumers(t)) {
        const int b = part_of_node[static_cast<size_t>(c)];
        if (b != static_cast<int>(a)) succ[a].push_back(b);
      }
    std::sort(succ[a].begin(), succ[a].end());
    succ[a].erase(std::unique(succ[a].begin(), succ[a].end()), succ[a].end());
  }
  return succ;
}

// Whether merging `group` would make a cycle: some partition outside it is reached from the group
// and reaches back into it. Partitions are in topological order, so only those between the
// group's first and last can lie on such a path.
bool merge_makes_cycle(const std::vector<int>& group, const std::vector<std::vector<int>>& succ) {
  const int last = group.back();
  std::vector<char> member(succ.size(), 0), seen(succ.size(), 0);
  for (int m : group) member[static_cast<size_t>(m)] = 1;
  std::queue<int> todo;
  for (int m : group)
    for (int b : succ[static_cast<size_t>(m)])
      if (!member[static_cast<size_t>(b)] && b < last && !seen[static_cast<size_t>(b)]) {
        seen[static_cast<size_t>(b)] = 1;
        todo.push(b);
      }
  while (!todo.empty()) {
    const int x = todo.front();
    todo.pop();
    for (int b : succ[static_cast<size_t>(x)]) {
      if (member[static_cast<size_t>(b)]) return true;
      if (b < last && !seen[static_cast<size_t>(b)]) {
        seen[static_cast<size_t>(b)] = 1;
        todo.push(b);
      }
    }
  }
  return false;
}

// Kahn's order of the partitions by their data dependencies, ties broken by first node index;
// fewer partitions than given when they form a cycle.
std::vector<Partition> topological(const ir::Graph& g, std::vector<Partition> parts) {
  std::vector<int> part_of_node(g.nodes.size(), -1);
  for (size_t i = 0; i < parts.size(); ++i)
    for (int n : parts[i].nodes) part_of_node[static_cast<size_t>(n)] = static_cast<int>(i);
  const auto succ = successors(g, parts, part_of_node);
  std::vector<int> indegree(parts.size(), 0);
  for (const auto& s : succ)
    for (int b : s) ++indegree[static_cast<size_t>(b)];
  auto later = [&](int a, int b) { return parts[static_cast<size_t>(a)].nodes[0] > parts[static_cast<size_t>(b)].nodes[0]; };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (size_t i = 0; i < parts.size(); ++i)
    if (indegree[i] == 0) ready.push(static_cast<int>(i));
  std::vector<Partition> out;
  out.reserve(parts.size());
  while (!ready.empty()) {
    const int a = ready.top();
    ready.pop();
    out.push_back(std::move(parts[static_cast<size_t>(a)]));
    for (int b : succ[static_cast<size_t>(a)])
      if (--indegree[static_cast<size_t>(b)] == 0) ready.push(b);
  }
  return out;
}

}  // namespace

void merge_pointwise_siblings(const ir::Graph& g, std::vector<Partition>& parts) {
  std::vector<std::vector<int64_t>> domain(parts.size());
  std::vector<int> part_of_node(g.nodes.size(), -1);
  size_t candidates = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    domain[i] = pointwise_domain(parts[i]);
    candidates += domain[i].empty() ? 0 : 1;
    for (int n : parts[i].nodes) part_of_node[static_cast<size_t>(n)] = static_cast<int>(i);
  }
  if (candidates < 2) return;
  std::vector<Partition> original = parts;
  // Siblings: candidates of one domain that read the same tensor, or one of which reads the other.
  UnionFind uf(parts.size());
  std::unordered_map<int, int> first_reader;  // tensor id -> the first candidate reading it
  for (size_t i = 0; i < parts.size(); ++i) {
    if (domain[i].empty()) continue;
    for (int t : parts[i].inputs) {
      const int producer = g.tensor(t).producer;
      const int from = producer >= 0 ? part_of_node[static_cast<size_t>(producer)] : -1;
      if (from >= 0 && domain[static_cast<size_t>(from)] == domain[i]) uf.join(from, static_cast<int>(i));
      auto [it, added] = first_reader.emplace(t, static_cast<int>(i));
      if (!added && domain[static_cast<size_t>(it->second)] == domain[i]) uf.join(it->second, static_cast<int>(i));
    }
  }
  std::unordered_map<int, std::vector<int>> groups;
  for (size_t i = 0; i < parts.size(); ++i)
    if (!domain[i].empty()) groups[uf.find(static_cast<int>(i))].push_back(static_cast<int>(i));
  const auto succ = successors(g, parts, part_of_node);
  std::vector<char> absorbed(parts.size(), 0);
  bool merged_any = false;
  for (auto& [root, group] : groups) {
    size_t nodes = 0;
    for (int m : group) nodes += parts[static_cast<size_t>(m)].nodes.size();
    if (group.size() < 2 || nodes > kMaxMergedNodes || merge_makes_cycle(group, succ)) continue;
    Partition& into = parts[static_cast<size_t>(group[0])];
    for (size_t k = 1; k < group.size(); ++k) {
      auto& from = parts[static_cast<size_t>(group[k])].nodes;
      into.nodes.insert(into.nodes.end(), from.begin(), from.end());
      absorbed[static_cast<size_t>(group[k])] = 1;
    }
    finish_partition(into);
    merged_any = true;
  }
  if (!merged_any) return;
  std::vector<Partition> kept;
  for (size_t i = 0; i < parts.size(); ++i)
    if (!absorbed[i]) kept.push_back(std::move(parts[i]));
  const size_t count = kept.size();
  std::vector<Partition> ordered = topological(g, std::move(kept));
  // Each merge was checked alone; two together can still close a cycle: then none is kept.
  if (ordered.size() == count) parts = std::move(ordered);
  else parts = std::move(original);
}

}  // namespace dnngraph
