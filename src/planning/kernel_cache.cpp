// The kernel cache. A file in the cache folder holds one binary:
//   "DGKERNEL" | u32 format version | key text (length-prefixed) | binary (length-prefixed) | u64 xxh3 of all before
// The key text is stored so that a file-name hash collision reads as a miss, not as a wrong kernel.
#include "planning/kernel_cache.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/bytes.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"
#include "planning/aot_kernels.hpp"
#include "planning/cache_files.hpp"

namespace dnngraph {
namespace {

constexpr char kMagic[8] = {'D', 'G', 'K', 'E', 'R', 'N', 'E', 'L'};
constexpr uint32_t kFormatVersion = 1;

thread_local KernelPresenceProbe* t_probe = nullptr;

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

}  // namespace

std::string KernelKey::text() const {
  // Length prefixes keep fields from running into each other ("a|b" + "c" vs "a" + "b|c").
  auto field = [](const std::string& s) { return std::to_string(s.size()) + ":" + s + ";"; };
  return "src=" + hex16(source_hash) + ";" + field(options) + field(arch) + field(compiler_version);
}

std::string KernelKey::portable_text() const {
  auto field = [](const std::string& s) { return std::to_string(s.size()) + ":" + s + ";"; };
  return "src=" + hex16(source_hash) + ";" + field(options) + field(arch);
}

std::string KernelKey::file_name() const { return hex16(hash64(text())) + ".dgk"; }

bool KernelCacheImpl::read_file(const std::string& dir, const KernelKey& key, Binary& binary) {
  const std::string path = dir + "/" + key.file_name();
  std::string bytes;
  bool found = false;
  if (auto s = files::read_whole(path, bytes, found); !s.ok() || !found) {
    if (!s.ok()) {
      DG_LOG(ERROR) << "kernel cache: " << s.message();
    }
    return false;
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < sizeof(kMagic) + 8) {
    DG_LOG(ERROR) << "kernel cache: '" << path << "' is truncated; ignoring it";
    return false;
  }
  const size_t body = bytes.size() - 8;
  ByteReader tail(data + body, 8);
  if (tail.get<uint64_t>() != hash64(data, body)) {
    DG_LOG(ERROR) << "kernel cache: '" << path << "' fails its checksum; ignoring it";
    return false;
  }
  ByteReader r(data, body);
  char magic[8];
  for (char& c : magic) c = r.get<char>();
  const uint32_t version = r.get<uint32_t>();
  std::string text;
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 || version != kFormatVersion || !r.get_string(text) ||
      text != key.text() || !r.get_bytes(binary) || r.remaining() != 0) {
    DG_LOG(ERROR) << "kernel cache: '" << path << "' is not a kernel of this key and format; ignoring it";
    binary.clear();
    return false;
  }
  return true;
}

Status KernelCacheImpl::write_file(const std::string& dir, const KernelKey& key, const Binary& binary) {
  if (auto s = files::make_directories(dir); !s.ok()) return s;
  ByteWriter w;
  for (char c : kMagic) w.put(c);
  w.put(kFormatVersion);
  w.put_string(key.text());
  w.put_bytes(binary.data(), binary.size());
  w.put(hash64(w.bytes().data(), w.bytes().size()));
  const auto& b = w.bytes();
  return files::write_atomically(dir + "/" + key.file_name(),
                                 std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

bool KernelCacheImpl::lookup(const KernelKey& key, Binary& binary) {
  const std::string text = key.text();
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = entries_.find(text); it != entries_.end()) {
      ++hits_;
      binary = *it->second;
      return true;
    }
    dir = dir_;
  }
  const bool on_disk = !dir.empty() && read_file(dir, key, binary);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on_disk) {
    ++misses_;
    return false;
  }
  ++hits_;
  keep(text, binary);
  return true;
}

Status KernelCacheImpl::insert(const KernelKey& key, const Binary& binary) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keep(key.text(), binary);
    dir = dir_;
  }
  return dir.empty() ? Status{} : write_file(dir, key, binary);
}

KernelPresenceProbe::KernelPresenceProbe(bool shipped_only) : shipped_only_(shipped_only) { t_probe = this; }
KernelPresenceProbe::~KernelPresenceProbe() { t_probe = nullptr; }

bool KernelCacheImpl::servable_without_compile(const KernelKey& key) {
  const std::string text = key.text();
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.count(text)) return true;
    dir = dir_;
  }
  Binary ignored;
  return (!dir.empty() && read_file(dir, key, ignored)) || aot_find(key) != nullptr;
}

Status KernelCacheImpl::get_or_compile(const KernelKey& key, const Compile& compile, Binary& binary) {
  if (KernelPresenceProbe* probe = t_probe; probe && !probe->asked_) {
    probe->asked_ = true;
    probe->present_ = probe->shipped_only_ ? aot_find(key) != nullptr : servable_without_compile(key);
    return {ErrorCode::DEVICE_NOT_AVAILABLE, "kernel cache: probing for '" + key.text() + "'; nothing is compiled"};
  }
  if (t_probe) return {ErrorCode::DEVICE_NOT_AVAILABLE, "kernel cache: probing; nothing is compiled"};
  const std::string text = key.text();
  std::string dir;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (auto it = entries_.find(text); it != entries_.end()) {
        ++hits_;
        binary = *it->second;
        return {};
      }
      if (!compiling_.count(text)) break;
      compiled_.wait(lock);  // another thread compiles this key; take its result (or retry if it failed)
    }
    if (key_log_) key_log_->push_back(key);
    if (!compile_misses_) {
      ++misses_;
      return {ErrorCode::DEVICE_NOT_AVAILABLE, "kernel cache: recording keys only; '" + text + "' is not compiled"};
    }
    compiling_.insert(text);
    dir = dir_;
  }
  // Whatever happens below (even an exception out of compile), waiters are released.
  struct Release {
    KernelCacheImpl& cache;
    const std::string& text;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(cache.mutex_);
        cache.compiling_.erase(text);
      }
      cache.compiled_.notify_all();
    }
  } release{*this, text};
  const bool from_disk = !dir.empty() && read_file(dir, key, binary);
  const AotKernel* aot = from_disk ? nullptr : aot_find(key);
  if (aot) {
    binary.assign(aot->data, aot->data + aot->size);
    DG_LOG(INFO) << "kernel cache: " << text << " served by the library's ahead-of-time kernels";
  }
  const Status s = from_disk || aot ? Status{} : compile(binary);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(from_disk ? hits_ : misses_);
    if (aot) ++aot_hits_;
    if (s.ok()) keep(text, binary);
  }
  // The library's own kernels are not copied into the folder: every process has them.
  if (s.ok() && !from_disk && !aot && !dir.empty()) {
    // A cache folder that cannot be written costs only the next process a compile.
    if (auto w = write_file(dir, key, binary); !w.ok()) {
      DG_LOG(ERROR) << "kernel cache: " << w.message();
    }
  }
  return s;
}

void KernelCacheImpl::keep(const std::string& text, const Binary& binary) {
  auto& slot = entries_[text];
  if (slot) bytes_ -= static_cast<int64_t>(slot->size());
  slot = std::make_shared<const Binary>(binary);
  bytes_ += static_cast<int64_t>(binary.size());
  // Over the budget: drop other entries (in key order, so in no particular order of use).
  for (auto it = entries_.begin(); byte_budget_ > 0 && bytes_ > byte_budget_ && it != entries_.end();) {
    if (it->first == text) {
      ++it;
      continue;
    }
    bytes_ -= static_cast<int64_t>(it->second->size());
    it = entries_.erase(it);
  }
}

void KernelCacheImpl::set_byte_budget(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  byte_budget_ = bytes;
}

KernelCacheImpl& process_kernel_cache() {
  static KernelCacheImpl* cache = [] {
    auto* c = new KernelCacheImpl();  // never destroyed: engines may compile during static teardown
    c->set_byte_budget(int64_t{256} << 20);
    return c;
  }();
  return *cache;
}

void KernelCacheImpl::set_directory(std::string dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  dir_ = std::move(dir);
}

int64_t KernelCacheImpl::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(entries_.size());
}
int64_t KernelCacheImpl::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}
int64_t KernelCacheImpl::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}
int64_t KernelCacheImpl::aot_hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aot_hits_;
}
void KernelCacheImpl::record_keys(std::vector<KernelKey>* log, bool compile) {
  std::lock_guard<std::mutex> lock(mutex_);
  key_log_ = log;
  compile_misses_ = compile;
}

KernelCache::KernelCache() : impl_(std::make_unique<KernelCacheImpl>()) {}
KernelCache::~KernelCache() = default;
KernelCache& KernelCache::set_directory(std::string dir) {
  impl_->set_directory(std::move(dir));
  return *this;
}
const std::string& KernelCache::get_directory() const { return impl_->directory(); }
int64_t KernelCache::size() const { return impl_->size(); }
int64_t KernelCache::hits() const { return impl_->hits(); }
int64_t KernelCache::misses() const { return impl_->misses(); }

}  // namespace dnngraph
