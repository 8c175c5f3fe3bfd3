// KernelCacheImpl: compiled kernel binaries by key, in memory and (when a folder is set) on disk.
//
// Engines that compile (NVRTC on CUDA; any CPU JIT later) ask the cache before compiling:
//   KernelKey key{hash64(source), options, target arch, compiler version};
//   std::vector<uint8_t> cubin;
//   auto compile = [&](std::vector<uint8_t>& out) { return nvrtc_compile(source, options, out); };
//   KernelCacheImpl& cache = t.kernel_cache ? *t.kernel_cache : process_kernel_cache();
//   Status s = cache.get_or_compile(key, compile, cubin);
// With dynamic shapes, sizes that vary are kernel arguments, so the source (and key) of a graph that
// differs only in batch size is the same and its binary is served from the cache.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dnngraph/kernel_cache.hpp"
#include "dnngraph/status.hpp"

namespace dnngraph {

struct KernelKey {
  uint64_t source_hash = 0;      // hash64 of the generated source text
  std::string options;           // compile options exactly as passed to the compiler
  std::string arch;              // "sm_90", or the CPU's ISA for a CPU JIT
  std::string compiler_version;  // "nvrtc 13.0"
  // The canonical text of the key: what entries are compared by (hash collisions cannot mix them up).
  std::string text() const;
  // The text without the compiler version: what ahead-of-time kernels are keyed by (a cubin built
  // by another NVRTC release runs the same; the source hash covers every header it compiled).
  std::string portable_text() const;
  // The entry's file name in the cache folder.
  std::string file_name() const;
};

struct KernelCacheImpl {
  using Binary = std::vector<uint8_t>;
  using Compile = std::function<Status(Binary&)>;

  // Memory first, then the folder (a file found there is kept in memory). Counts a hit or a miss.
  bool lookup(const KernelKey& key, Binary& binary);
  // Keeps the binary in memory and, when a folder is set, writes it there atomically.
  Status insert(const KernelKey& key, const Binary& binary);
  // lookup, else an ahead-of-time kernel of the library (planning/aot_kernels.hpp), else compile
  // (once: concurrent callers with the same key wait for the first) and insert. A failed compile is
  // returned to its caller and is not cached.
  Status get_or_compile(const KernelKey& key, const Compile& compile, Binary& binary);

  void set_directory(std::string dir);
  // At most this many bytes of binaries in memory (0: no limit); others are dropped to make room.
  void set_byte_budget(int64_t bytes);
  const std::string& directory() const { return dir_; }
  int64_t size() const;
  int64_t hits() const;
  int64_t misses() const;
  int64_t aot_hits() const;  // misses of memory and folder served by an ahead-of-time kernel

  // For the AOT generator and its test: every key get_or_compile is asked for is appended to
  // `log` (null: none). With compile false a miss is neither served nor compiled: get_or_compile
  // returns DEVICE_NOT_AVAILABLE, so keys are collected without NVRTC's time.
  void record_keys(std::vector<KernelKey>* log, bool compile);

 private:
  // Reads and checks <dir>/<file_name>; false (with a log line) when missing, corrupt or foreign.
  static bool read_file(const std::string& dir, const KernelKey& key, Binary& binary);
  static Status write_file(const std::string& dir, const KernelKey& key, const Binary& binary);
  void keep(const std::string& text, const Binary& binary);  // mutex_ held
  // The probe's answer for `key` (KernelPresenceProbe); counts nothing, compiles nothing.
  bool servable_without_compile(const KernelKey& key);

  mutable std::mutex mutex_;
  std::condition_variable compiled_;
  std::map<std::string, std::shared_ptr<const Binary>> entries_;  // by key text
  std::set<std::string> compiling_;                               // keys being compiled now
  std::string dir_;
  int64_t hits_ = 0, misses_ = 0, aot_hits_ = 0;
  std::vector<KernelKey>* key_log_ = nullptr;
  bool compile_misses_ = true;
  int64_t bytes_ = 0, byte_budget_ = 0;
};

// While one lives on a thread, get_or_compile on that thread compiles nothing: it notes whether
// the first key asked for would be served without compiling (memory, the folder or the library's
// ahead-of-time kernels) and fails with DEVICE_NOT_AVAILABLE, which ends the build that asked.
// Mode A uses it to learn, for the price of code generation, whether building an own engine's
// candidate would run NVRTC (planning/heuristics.cpp). `shipped_only`: present means among the
// library's ahead-of-time kernels, whatever the caches hold (planning/shipped_kernels.hpp). Not
// nestable.
class KernelPresenceProbe {
 public:
  explicit KernelPresenceProbe(bool shipped_only = false);
  ~KernelPresenceProbe();
  KernelPresenceProbe(const KernelPresenceProbe&) = delete;
  KernelPresenceProbe& operator=(const KernelPresenceProbe&) = delete;
  bool asked() const { return asked_; }      // a build asked the cache for a kernel
  bool present() const { return present_; }  // ... and it would have been served without compiling

 private:
  friend struct KernelCacheImpl;
  bool shipped_only_ = false;
  bool asked_ = false, present_ = false;
};

// The cache of compiles for graphs without a KernelCache of their own: in memory only, 256 MB at
// most, for the process's life. Without it every plan compiled its kernel again, even when
// hundreds of partitions share one source (~26 ms each with NVRTC).
KernelCacheImpl& process_kernel_cache();

inline KernelCacheImpl& impl_of(const KernelCache& c) { return *c.impl_; }

}  // namespace dnngraph
