// The CUDA graphs of one cuDNN plan, one per pointer set (native_graph.hpp says how each is made).
//
// A graph holds the pointers (and host scalar values) of one variant pack, so a plan whose caller
// alternates buffers (ping-pong activations, a caching allocator handing back a few addresses)
// would otherwise re-make its graph on every call. The cache keeps up to kCapacity graphs, each
// keyed by the exact pointer set it holds (every tensor pointer or by-value scalar, then the
// workspace), least recently used first out.
//
// Admission: making a graph (populate or capture + instantiate/update) costs more than one
// cudnnBackendExecute, so a pointer set gets a graph on its second sighting among the last
// kSightings sets without one; pointers that change on every call never get one. When the cache
// is full, a new set replaces the least recently used graph only once that graph has sat idle for
// kIdleCalls calls: a working set larger than the cache keeps the graphs it has and runs the rest
// through cudnnBackendExecute, instead of re-making a graph on every call.
//
// Not thread-safe: the plan holds the cuDNN handle's mutex around every use.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "engines/cudnn/native_graph.hpp"

namespace dnngraph::cudnn {

using PointerSet = std::vector<uint64_t>;

class GraphCache {
 public:
  static constexpr size_t kCapacity = 8;
  static constexpr size_t kSightings = 16;
  static constexpr uint64_t kIdleCalls = 4 * kCapacity;

  // The graph holding exactly `key`, or null. Every call (hit or miss) advances the cache's clock.
  NativeGraph* find(const PointerSet& key);
  // After a miss: whether `key` should get a graph now (see above). When it should not, the
  // sighting is recorded.
  bool admit(const PointerSet& key);
  // The graph object for `key` after admit() said yes: a new one, or the least recently used one
  // (its prepare() then updates it in place). Its entry is keyed by `key` from now on.
  NativeGraph& slot_for(const PointerSet& key);
  // Forgets every graph and sighting (a graph could not be made: the plan stays on execute).
  void clear();
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    PointerSet key;
    std::unique_ptr<NativeGraph> graph;
    uint64_t last_use = 0;
  };
  size_t least_recent() const;
  std::vector<Entry> entries_;
  std::array<PointerSet, kSightings> sightings_;  // a ring; empty slots hold no set
  size_t next_sighting_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace dnngraph::cudnn
