// The tuning DB: autotune's winners on disk, read back by heuristic mode B.
//
// One text line per (graph fingerprint, partition, device signature, library version) -> engine +
// knobs + measured median time. A partition is named by its node indices in the IR, so a graph
// whose engines split it differently never matches a stale record. Lines are tab-separated and end
// with a checksum of the line (format in tuning_db.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "planning/engine.hpp"

namespace dnngraph {

struct TuningRecord {
  uint64_t fingerprint = 0;     // ir::Graph::fingerprint(dynamic_shapes)
  std::string nodes;            // the partition's node indices, "0,1,2"
  std::string device;           // DeviceInfo::signature
  std::string library_version;  // kVersionString when made by this build
  std::string engine;           // engine name (names are stable, as ids are)
  Knobs knobs;
  double seconds = 0;           // median measured time

  // The fields that identify the record (everything but the result).
  std::string key() const;
};

// "0,1,2": the key of a partition's node list.
std::string partition_nodes_key(const Partition& p);

class TuningDb {
 public:
  explicit TuningDb(std::string path) : path_(std::move(path)) {}
  // $DNNGRAPH_TUNING_DB, else <cache dir>/tuning.db (files::default_cache_dir); empty when no
  // cache folder can be named.
  static std::string default_path();
  const std::string& path() const { return path_; }

  // Reads this library version's records. Corrupt lines and other versions' lines are skipped, each
  // with a warning naming the file, the line and why. A missing file is an empty DB.
  Status load(std::vector<TuningRecord>& records, std::vector<std::string>& warnings) const;
  // The record for one partition on one device made by this library version, if any.
  std::optional<TuningRecord> find(uint64_t fingerprint, const std::string& nodes, const std::string& device,
                                   std::vector<std::string>& warnings) const;
  // Adds records, replacing those with the same key. Under an exclusive lock on <path>.lock it
  // re-reads the file, merges and renames a new file over it, so concurrent writers lose nothing.
  // Other versions' lines are kept as they are. A file with corrupt lines is first copied to
  // <path>.damaged-<UTC time> (a warning says so), then rewritten without them; a file that is no
  // tuning DB at all (no header, no intact record) is an IO_ERROR and is left untouched.
  Status store(const std::vector<TuningRecord>& records, std::vector<std::string>& warnings) const;

  static std::string format_line(const TuningRecord& r);
  // Parses a line of this format; `why` says what is wrong when it returns false.
  static bool parse_line(const std::string& line, TuningRecord& r, std::string& why);

 private:
  std::string path_;
};

}  // namespace dnngraph
