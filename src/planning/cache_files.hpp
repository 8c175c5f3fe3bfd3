// Files under the cache directory (tuning DB, kernel binaries): where they live, atomic writes, and
// an inter-process lock. Readers never see a half-written file: writers fill a temp file in the same
// folder and rename it over the target.
#pragma once
#include <string>
#include <string_view>

#include "dnngraph/status.hpp"

namespace dnngraph::files {

// $DNNGRAPH_CACHE_DIR, else $HOME/.cache/dnngraph; empty when neither is set.
std::string default_cache_dir();

// Creates `dir` and its parents when missing.
Status make_directories(const std::string& dir);

// Writes `data` to `path` atomically: a unique temp file beside it, fsync, rename.
Status write_atomically(const std::string& path, std::string_view data);

// Reads the whole file. A missing file is not an error: `found` is false and `out` empty.
Status read_whole(const std::string& path, std::string& out, bool& found);

// An exclusive advisory lock (flock) on `path`, created if missing; released by the destructor.
// Serializes read-modify-write cycles of several processes on one file.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  Status acquire(const std::string& path);

 private:
  int fd_ = -1;
};

}  // namespace dnngraph::files
