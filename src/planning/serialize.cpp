// Graph::serialize / Graph::deserialize: a built graph as bytes, reloaded without compiling.
//
// Layout (little-endian; strings and byte blobs are u64-length-prefixed, see core/bytes.hpp):
//   "DNNGRAPH" | u32 format version | library version | device signature
//   | graph JSON (Graph::to_json) | u64 IR fingerprint | u32 n, u8 heuristic modes
//   | u32 n, selected engine names | u32 n, deselected engine names | u32 n, (i64 uid, tensor name)
//   | u32 partitions, each: u32 n, i32 node indices | i32 engine id | engine name
//                           | u32 n, (knob name, i64 value) | plan payload (Plan::serialize)
//   | u64 xxh3 of every byte before it
// Deserialize checks the checksum first, then every length and count, the versions and the device;
// it rebuilds the graph from its JSON, re-partitions it, checks that the partitions are the stored
// ones, and hands each engine its payload (Engine::deserialize), so nothing is compiled.
#include <algorithm>
#include <cstring>

#include "core/hash.hpp"
#include "core/no_throw.hpp"
#include "dnngraph/version.hpp"
#include "planning/plan_set.hpp"
#include "planning/shipped_kernels.hpp"

namespace dnngraph {
namespace {

constexpr char kMagic[8] = {'D', 'N', 'N', 'G', 'R', 'A', 'P', 'H'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kMaxString = size_t{1} << 30;

Status bad(const std::string& why) { return {ErrorCode::SERIALIZATION_FAILED, "deserialize: " + why}; }

void put_strings(ByteWriter& w, const std::vector<std::string>& v) {
  w.put(static_cast<uint32_t>(v.size()));
  for (const auto& s : v) w.put_string(s);
}

// A count read from the bytes, bounded by what is left (each item takes at least `min_item` bytes),
// so corrupt counts cannot make us allocate without limit.
bool get_count(ByteReader& r, size_t min_item, uint32_t& n) {
  n = r.get<uint32_t>();
  return r.ok() && n <= r.remaining() / std::max<size_t>(min_item, 1);
}

bool get_strings(ByteReader& r, std::vector<std::string>& v) {
  uint32_t n = 0;
  if (!get_count(r, 8, n)) return false;
  v.resize(n);
  for (auto& s : v)
    if (!r.get_string(s, kMaxString)) return false;
  return true;
}

struct StoredPartition {
  std::vector<int> nodes;
  int engine_id = -1;
  std::string engine_name;
  Knobs knobs;
  std::vector<uint8_t> payload;
};

struct Stored {
  std::string library_version, device, graph_json;
  uint64_t fingerprint = 0;
  std::vector<HeurMode> modes;
  std::vector<std::string> selected, deselected;
  std::vector<std::pair<int64_t, std::string>> uids;
  std::vector<StoredPartition> parts;
};

Status read_partition(ByteReader& r, StoredPartition& p) {
  uint32_t n = 0;
  if (!get_count(r, 4, n)) return bad("truncated partition node list");
  p.nodes.resize(n);
  for (int& node : p.nodes) node = r.get<int32_t>();
  p.engine_id = r.get<int32_t>();
  if (!r.get_string(p.engine_name, kMaxString)) return bad("truncated engine name");
  if (!get_count(r, 16, n)) return bad("truncated knob list");
  for (uint32_t i = 0; i < n; ++i) {
    std::string name;
    if (!r.get_string(name, kMaxString)) return bad("truncated knob name");
    p.knobs[name] = r.get<int64_t>();
  }
  if (!r.get_bytes(p.payload)) return bad("truncated plan payload of engine '" + p.engine_name + "'");
  return {};
}

Status read_stored(const std::vector<uint8_t>& bytes, Stored& s) {
  if (bytes.size() < sizeof(kMagic) + 4 + 8 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return bad("not a serialized dnngraph plan (no \"DNNGRAPH\" magic at the start)");
  ByteReader head(bytes.data() + sizeof(kMagic), bytes.size() - sizeof(kMagic));
  if (const uint32_t v = head.get<uint32_t>(); v != kFormatVersion)
    return bad("format version " + std::to_string(v) + " is not the supported version " + std::to_string(kFormatVersion));
  const size_t body = bytes.size() - 8;
  ByteReader tail(bytes.data() + body, 8);
  if (tail.get<uint64_t>() != hash64(bytes.data(), body))
    return bad("checksum mismatch: the " + std::to_string(bytes.size()) + " bytes are truncated or corrupt");
  ByteReader r(bytes.data() + sizeof(kMagic) + 4, body - sizeof(kMagic) - 4);
  if (!r.get_string(s.library_version, 256) || !r.get_string(s.device, 4096)) return bad("truncated header");
  if (s.library_version != kVersionString)
    return bad("made by dnngraph " + s.library_version + "; this is dnngraph " + kVersionString);
  if (!r.get_string(s.graph_json, kMaxString)) return bad("truncated graph JSON");
  s.fingerprint = r.get<uint64_t>();
  uint32_t n = 0;
  if (!get_count(r, 1, n)) return bad("truncated heuristic modes");
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t m = r.get<uint8_t>();
    if (m > static_cast<uint8_t>(HeurMode::FALLBACK)) return bad("unknown heuristic mode " + std::to_string(m));
    s.modes.push_back(static_cast<HeurMode>(m));
  }
  if (!get_strings(r, s.selected) || !get_strings(r, s.deselected)) return bad("truncated engine filters");
  if (!get_count(r, 16, n)) return bad("truncated uid list");
  s.uids.resize(n);
  for (auto& [uid, name] : s.uids) {
    uid = r.get<int64_t>();
    if (!r.get_string(name, kMaxString)) return bad("truncated uid list");
  }
  if (!get_count(r, 24, n)) return bad("truncated partition list");
  s.parts.resize(n);
  for (auto& p : s.parts)
    if (auto st = read_partition(r, p); !st.ok()) return st;
  if (!r.ok() || r.remaining() != 0) return bad("trailing or missing bytes after the partitions");
  return {};
}

std::string nodes_text(const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ",") + std::to_string(n);
  return "[" + s + "]";
}

// Puts the stored engine and knobs first in the re-created partition and rebuilds its plan from the payload.
Status restore_partition(GraphImpl& g, const Handle& handle, PartitionPlans& pp, const StoredPartition& sp, size_t index) {
  const std::string where = "partition " + std::to_string(index) + " " + nodes_text(sp.nodes);
  const Engine* engine = engine_by_id(sp.engine_id);
  if (!engine || engine->name() != sp.engine_name)
    return bad(where + ": engine '" + sp.engine_name + "' (id " + std::to_string(sp.engine_id) + ") is not in this build");
  auto it = std::find_if(pp.candidates.begin(), pp.candidates.end(),
                         [&](const Candidate& c) { return c.engine_id == sp.engine_id && c.knobs == sp.knobs; });
  // A plan made by create_execution_plan may hold knobs outside the engine's list: it is restored
  // when the engine still accepts the partition and its schema the knobs.
  if (it == pp.candidates.end() && engine->check(pp.partition, make_target(g, handle)).ok &&
      engine->check_knobs(sp.knobs).ok())
    it = pp.candidates.insert(pp.candidates.end(), Candidate{sp.engine_id, sp.knobs, 0, -1});
  if (it == pp.candidates.end())
    return bad(where + ": engine '" + sp.engine_name + "' with knobs [" + knobs_to_string(sp.knobs) +
               "] no longer accepts it on " + handle.device().to_string());
  const size_t i = static_cast<size_t>(it - pp.candidates.begin());
  std::rotate(pp.candidates.begin(), pp.candidates.begin() + static_cast<std::ptrdiff_t>(i),
              pp.candidates.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  std::unique_ptr<Plan> plan;
  ByteReader payload(sp.payload.data(), sp.payload.size());
  const Target target = shipped_kernel_target(*engine, pp.partition, make_target(g, handle), sp.knobs);
  if (auto s = engine->deserialize(pp.partition, target, sp.knobs, payload, plan); !s.ok())
    return bad(where + ": engine '" + sp.engine_name + "' could not reload its plan: " + s.message());
  if (!payload.ok() || !plan) return bad(where + ": engine '" + sp.engine_name + "' plan payload is truncated");
  pp.built.assign(pp.candidates.size(), nullptr);
  pp.built[0] = std::move(plan);
  pp.chosen = 0;
  return {};
}

// Rebuilds the graph, its IR and its plans from what was stored, into `out`.
Status rebuild(const Stored& s, const Handle& handle, std::shared_ptr<KernelCache> cache, Graph& out) {
  if (auto st = Graph::from_json(s.graph_json, out); !st.ok()) return bad("the stored graph: " + st.message());
  out.set_kernel_cache(std::move(cache)).select_engines(s.selected).deselect_engines(s.deselected);
  if (auto st = out.validate(); !st.ok()) return bad("the stored graph is not valid: " + st.message());
  if (auto st = out.build_operation_graph(handle); !st.ok()) return bad("the stored graph: " + st.message());
  GraphImpl& g = impl_of(out);
  if (g.ir->fingerprint(g.ir->dynamic_shapes) != s.fingerprint)
    return bad("the stored graph JSON does not rebuild the graph that was serialized (fingerprints differ)");
  for (const auto& stored : s.uids) {
    const bool found = std::any_of(g.ir->tensors.begin(), g.ir->tensors.end(), [&](const ir::Tensor& t) {
      return !t.is_virtual && t.uid == stored.first && t.name == stored.second;
    });
    if (!found)
      return bad("tensor '" + stored.second + "' with uid " + std::to_string(stored.first) + " is missing from the stored graph");
  }
  if (s.modes.empty()) return bad("no heuristic mode stored");
  if (auto st = out.create_execution_plans(s.modes); !st.ok()) return bad("re-planning the stored graph: " + st.message());
  auto& parts = g.plans->parts;
  if (parts.size() != s.parts.size())
    return bad("the graph now forms " + std::to_string(parts.size()) + " partitions, the stored plan has " +
               std::to_string(s.parts.size()));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].partition.nodes != s.parts[i].nodes)
      return bad("partition " + std::to_string(i) + " now holds nodes " + nodes_text(parts[i].partition.nodes) +
                 ", the stored plan " + nodes_text(s.parts[i].nodes));
    if (auto st = restore_partition(g, handle, parts[i], s.parts[i], i); !st.ok()) return st;
  }
  g.stage = Stage::PLANS_BUILT;
  return {};
}

}  // namespace

Status Graph::serialize(std::vector<uint8_t>& bytes) const {
  return no_throw(ErrorCode::SERIALIZATION_FAILED, "serialize", [&]() -> Status {
    const GraphImpl& g = *impl_;
    if (g.stage < Stage::PLANS_BUILT || !g.plans || !g.handle)
      return {ErrorCode::INVALID_CALL_ORDER, "serialize: call build_plans first"};
    ByteWriter w;
    for (char c : kMagic) w.put(c);
    w.put(kFormatVersion);
    w.put_string(kVersionString);
    w.put_string(impl_of(*g.handle).info.signature);
    w.put_string(to_json());
    w.put(g.ir->fingerprint(g.ir->dynamic_shapes));
    w.put(static_cast<uint32_t>(g.plans->modes.size()));
    for (HeurMode m : g.plans->modes) w.put(static_cast<uint8_t>(m));
    put_strings(w, g.selected_engines);
    put_strings(w, g.deselected_engines);
    std::vector<const ir::Tensor*> user_tensors;
    for (const auto& t : g.ir->tensors)
      if (!t.is_virtual) user_tensors.push_back(&t);
    w.put(static_cast<uint32_t>(user_tensors.size()));
    for (const ir::Tensor* t : user_tensors) {
      w.put(t->uid);
      w.put_string(t->name);
    }
    w.put(static_cast<uint32_t>(g.plans->parts.size()));
    for (const auto& pp : g.plans->parts) {
      const auto& plan = pp.built[static_cast<size_t>(pp.chosen)];
      if (!plan)
        return {ErrorCode::INVALID_CALL_ORDER,
                "serialize: the chosen plan of partition '" + pp.partition.pattern + "' is not built"};
      const Candidate& c = pp.candidates[static_cast<size_t>(pp.chosen)];
      w.put(static_cast<uint32_t>(pp.partition.nodes.size()));
      for (int n : pp.partition.nodes) w.put(static_cast<int32_t>(n));
      w.put(static_cast<int32_t>(c.engine_id));
      w.put_string(std::string(engine_by_id(c.engine_id)->name()));
      w.put(static_cast<uint32_t>(c.knobs.size()));
      for (const auto& [name, value] : c.knobs) {
        w.put_string(name);
        w.put(value);
      }
      ByteWriter payload;
      plan->serialize(payload);
      w.put_bytes(payload.bytes().data(), payload.bytes().size());
    }
    w.put(hash64(w.bytes().data(), w.bytes().size()));
    bytes = std::move(w.bytes());
    return {};
  });
}

Status Graph::deserialize(const Handle& handle, const std::vector<uint8_t>& bytes) {
  return no_throw(ErrorCode::SERIALIZATION_FAILED, "deserialize", [&]() -> Status {
    if (!handle.status().ok()) return handle.status();
    Stored s;
    if (auto st = read_stored(bytes, s); !st.ok()) return st;
    if (s.device != impl_of(handle).info.signature)
      return bad("the plan was built for device '" + s.device + "'; this handle is '" +
                 impl_of(handle).info.signature + "'");
    Graph loaded;
    if (auto st = rebuild(s, handle, impl_->kernel_cache, loaded); !st.ok()) return st;
    *this = std::move(loaded);  // only a complete reload replaces the graph
    return {};
  });
}

}  // namespace dnngraph
