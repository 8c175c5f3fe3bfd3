#include "engines/cudnn/graph_cache.hpp"

#include <algorithm>

namespace dnngraph::cudnn {

NativeGraph* GraphCache::find(const PointerSet& key) {
  ++clock_;
  for (Entry& e : entries_)
    if (e.key == key) {
      e.last_use = clock_;
      return e.graph.get();
    }
  return nullptr;
}

size_t GraphCache::least_recent() const {
  size_t lru = 0;
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].last_use < entries_[lru].last_use) lru = i;
  return lru;
}

bool GraphCache::admit(const PointerSet& key) {
  auto seen = std::find(sightings_.begin(), sightings_.end(), key);
  const bool room = entries_.size() < kCapacity || entries_[least_recent()].last_use + kIdleCalls <= clock_;
  if (seen != sightings_.end() && room) {
    seen->clear();  // promoted: the graph's entry stands for it from now on
    return true;
  }
  if (seen == sightings_.end()) {  // a set seen before keeps its one sighting
    sightings_[next_sighting_].assign(key.begin(), key.end());  // reuses the slot's storage
    next_sighting_ = (next_sighting_ + 1) % kSightings;
  }
  return false;
}

NativeGraph& GraphCache::slot_for(const PointerSet& key) {
  if (entries_.size() < kCapacity) {
    entries_.push_back({key, std::make_unique<NativeGraph>(), clock_});
    return *entries_.back().graph;
  }
  Entry& e = entries_[least_recent()];
  e.key.assign(key.begin(), key.end());
  e.last_use = clock_;
  return *e.graph;
}

void GraphCache::clear() {
  entries_.clear();
  for (PointerSet& s : sightings_) s.clear();
}

}  // namespace dnngraph::cudnn
