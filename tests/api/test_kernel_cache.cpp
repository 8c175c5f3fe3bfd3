// The kernel cache: keys, counters, the disk folder, concurrent compiles, dynamic-shape keys.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/temp_dir.hpp"
#include "core/hash.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/kernel_cache.hpp"

namespace dg = dnngraph;

namespace {

std::string fresh_dir() { return test_files::fresh_dir("dg_kcache"); }

dg::KernelKey key_of(const std::string& source, std::string options = "-O3", std::string arch = "sm_90") {
  return dg::KernelKey{dg::hash64(source), std::move(options), std::move(arch), "nvrtc 13.0"};
}

// A "compiler" that counts its calls and returns bytes derived from the key.
struct CountingCompiler {
  std::atomic<int> calls{0};
  dg::KernelCacheImpl::Compile for_key(const dg::KernelKey& key) {
    return [this, key](std::vector<uint8_t>& out) {
      ++calls;
      const std::string text = key.text();
      out.assign(text.begin(), text.end());
      return dg::Status{};
    };
  }
};

}  // namespace

TEST(KernelCache, CompilesOnceThenHits) {
  auto cache = std::make_shared<dg::KernelCache>();
  dg::KernelCacheImpl& c = impl_of(*cache);
  CountingCompiler compiler;
  const auto key = key_of("__global__ void k() {}");
  std::vector<uint8_t> a, b;
  ASSERT_TRUE(c.get_or_compile(key, compiler.for_key(key), a).ok());
  ASSERT_TRUE(c.get_or_compile(key, compiler.for_key(key), b).ok());
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(cache->size(), 1);
  EXPECT_EQ(cache->hits(), 1);
  EXPECT_EQ(cache->misses(), 1);
}

TEST(KernelCache, EveryKeyFieldSeparatesEntries) {
  dg::KernelCache cache;
  CountingCompiler compiler;
  const std::vector<dg::KernelKey> keys{key_of("src"), key_of("src2"), key_of("src", "-O2"), key_of("src", "-O3", "sm_80"),
                                        dg::KernelKey{dg::hash64("src"), "-O3", "sm_90", "nvrtc 12.8"}};
  for (const auto& k : keys) {
    std::vector<uint8_t> bin;
    ASSERT_TRUE(impl_of(cache).get_or_compile(k, compiler.for_key(k), bin).ok());
    EXPECT_EQ(std::string(bin.begin(), bin.end()), k.text());
  }
  EXPECT_EQ(compiler.calls, static_cast<int>(keys.size()));
  EXPECT_EQ(cache.size(), static_cast<int64_t>(keys.size()));
  // Fields cannot run into each other.
  EXPECT_NE((dg::KernelKey{1, "a;", "b", "c"}.text()), (dg::KernelKey{1, "a", ";b", "c"}.text()));
}

TEST(KernelCache, LookupAndInsert) {
  dg::KernelCache cache;
  const auto key = key_of("x");
  std::vector<uint8_t> bin;
  EXPECT_FALSE(impl_of(cache).lookup(key, bin));
  EXPECT_EQ(cache.misses(), 1);
  ASSERT_TRUE(impl_of(cache).insert(key, {1, 2, 3}).ok());
  ASSERT_TRUE(impl_of(cache).lookup(key, bin));
  EXPECT_EQ(bin, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(cache.hits(), 1);
}

TEST(KernelCache, DiskFolderServesAnotherCache) {
  const std::string dir = fresh_dir() + "/kernels";
  CountingCompiler compiler;
  const auto key = key_of("__global__ void disk() {}");
  std::vector<uint8_t> first, second;
  {
    dg::KernelCache writer;
    writer.set_directory(dir);
    EXPECT_EQ(writer.get_directory(), dir);
    ASSERT_TRUE(impl_of(writer).get_or_compile(key, compiler.for_key(key), first).ok());
  }
  ASSERT_TRUE(std::filesystem::exists(dir + "/" + key.file_name()));
  dg::KernelCache reader;
  reader.set_directory(dir);
  ASSERT_TRUE(impl_of(reader).get_or_compile(key, compiler.for_key(key), second).ok());
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(first, second);
  EXPECT_EQ(reader.hits(), 1);
  EXPECT_EQ(reader.misses(), 0);
}

TEST(KernelCache, CorruptOrForeignFilesAreMisses) {
  const std::string dir = fresh_dir();
  CountingCompiler compiler;
  const auto key = key_of("k");
  {
    dg::KernelCache writer;
    writer.set_directory(dir);
    std::vector<uint8_t> bin;
    ASSERT_TRUE(impl_of(writer).get_or_compile(key, compiler.for_key(key), bin).ok());
  }
  const std::string path = dir + "/" + key.file_name();
  const auto size = std::filesystem::file_size(path);
  for (int damage = 0; damage < 3; ++damage) {
    if (damage == 0) {
      std::filesystem::resize_file(path, size / 2);  // truncated
    } else if (damage == 1) {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size / 2));
      f.put('\x7f');  // a flipped byte
    } else {
      // A valid file for another key under this key's name (a file-name collision).
      const auto other = key_of("other");
      dg::KernelCache tmp;
      tmp.set_directory(dir);
      ASSERT_TRUE(impl_of(tmp).insert(other, {9, 9}).ok());
      std::filesystem::rename(dir + "/" + other.file_name(), path);
    }
    dg::KernelCache reader;
    reader.set_directory(dir);
    std::vector<uint8_t> bin;
    const int before = compiler.calls;
    ASSERT_TRUE(impl_of(reader).get_or_compile(key, compiler.for_key(key), bin).ok());
    EXPECT_EQ(compiler.calls, before + 1) << "damage " << damage;
    EXPECT_EQ(std::string(bin.begin(), bin.end()), key.text());
    EXPECT_EQ(std::filesystem::file_size(path), size);  // rewritten whole
  }
}

TEST(KernelCache, FailedCompileIsNotCached) {
  dg::KernelCache cache;
  const auto key = key_of("bad");
  int calls = 0;
  auto failing = [&](std::vector<uint8_t>&) {
    ++calls;
    return dg::Status{dg::ErrorCode::COMPILATION_FAILED, "nvrtc: error: expected ';'"};
  };
  std::vector<uint8_t> bin;
  EXPECT_EQ(impl_of(cache).get_or_compile(key, failing, bin).code(), dg::ErrorCode::COMPILATION_FAILED);
  EXPECT_EQ(impl_of(cache).get_or_compile(key, failing, bin).code(), dg::ErrorCode::COMPILATION_FAILED);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.size(), 0);
}

TEST(KernelCache, ConcurrentCallersCompileOnce) {
  dg::KernelCache cache;
  std::atomic<int> calls{0};
  const auto key = key_of("shared");
  auto slow = [&](std::vector<uint8_t>& out) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    out = {4, 2};
    return dg::Status{};
  };
  std::vector<std::thread> threads;
  std::vector<std::vector<uint8_t>> bins(8);
  std::atomic<int> failures{0};
  for (size_t i = 0; i < bins.size(); ++i)
    threads.emplace_back([&, i] { failures += !impl_of(cache).get_or_compile(key, slow, bins[i]).ok(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(calls, 1);
  for (const auto& b : bins) EXPECT_EQ(b, (std::vector<uint8_t>{4, 2}));
  EXPECT_EQ(cache.hits() + cache.misses(), 8);
  EXPECT_EQ(cache.misses(), 1);
}

// With dynamic shapes, the key an engine derives from a graph must not depend on the batch size:
// graphs that differ only in batch size share fingerprints (and so kernel keys and tuning records).
TEST(KernelCache, DynamicShapeGraphsShareTheirFingerprint) {
  dg::Handle handle(dg::Device::cpu());
  auto fingerprint = [&](int64_t n, bool dynamic, uint64_t& fp) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT).set_dynamic_shape_enabled(dynamic);
    auto x = g.tensor(dg::TensorAttr().set_name("X").set_uid(1).set_dim({n, 16, 4}).set_stride({64, 4, 1}));
    auto b = g.tensor(dg::TensorAttr().set_name("B").set_uid(2).set_dim({1, 16, 1}).set_stride({16, 1, 1}));
    auto y = g.relu(g.bias(x, b));
    y->set_output(true).set_uid(3);
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    fp = impl_of(g).ir->fingerprint(impl_of(g).ir->dynamic_shapes);
  };
  uint64_t d8 = 0, d32 = 0, s8 = 0, s32 = 0;
  fingerprint(8, true, d8);
  fingerprint(32, true, d32);
  fingerprint(8, false, s8);
  fingerprint(32, false, s32);
  EXPECT_EQ(d8, d32);
  EXPECT_NE(s8, s32);
}

// A byte budget bounds the binaries kept in memory (the process-wide cache has one): older
// entries make room, the one just added stays, and a dropped one compiles again.
TEST(KernelCache, ByteBudgetBoundsWhatIsKept) {
  dg::KernelCacheImpl cache;
  const std::vector<uint8_t> forty(40, 7);
  cache.set_byte_budget(100);
  for (const char* s : {"a", "b", "c", "d"}) ASSERT_TRUE(cache.insert(key_of(s), forty).ok());
  EXPECT_EQ(cache.size(), 2);  // 2 x 40 <= 100 < 3 x 40
  std::vector<uint8_t> got;
  EXPECT_TRUE(cache.lookup(key_of("d"), got));
  EXPECT_EQ(got, forty);
  // Of a, b, c exactly one is still kept (with d); a dropped one compiles again.
  std::vector<std::string> dropped;
  for (const char* s : {"a", "b", "c"})
    if (!cache.lookup(key_of(s), got)) dropped.push_back(s);
  ASSERT_EQ(dropped.size(), 2u);
  CountingCompiler cc;
  ASSERT_TRUE(cache.get_or_compile(key_of(dropped[0]), cc.for_key(key_of(dropped[0])), got).ok());
  EXPECT_EQ(cc.calls, 1);
  EXPECT_EQ(cache.size(), 2);
}

// Graphs without a cache of their own still compile a shared source once per process.
TEST(KernelCache, TheProcessCacheServesGraphsWithoutOne) {
  dg::KernelCacheImpl& cache = dg::process_kernel_cache();
  EXPECT_EQ(&cache, &dg::process_kernel_cache());
  CountingCompiler cc;
  std::vector<uint8_t> a, b;
  const auto key = key_of("process cache test source");
  ASSERT_TRUE(cache.get_or_compile(key, cc.for_key(key), a).ok());
  ASSERT_TRUE(cache.get_or_compile(key, cc.for_key(key), b).ok());
  EXPECT_EQ(cc.calls, 1);
  EXPECT_EQ(a, b);
}
