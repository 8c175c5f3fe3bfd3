// dnngraph_aot_gen: makes the library's ahead-of-time kernels at build time, without a GPU. For
// each graph file (and, with --dynamic, its dynamic-shape form) it plans for a described H200
// (planning/described_target.hpp), builds every own CUDA engine's first candidate per partition
// (planning/aot_plan.hpp), so that NVRTC compiles exactly the sources those engines generate, and
// writes the compiled kernels as a blob plus a C++ table (planning/aot_kernels.hpp) that includes
// the blob with .incbin. A folder cache (--cache) keeps cubins between runs, so a rebuild that
// changed no kernel source compiles nothing.
// --generic NAME.json: that graph's dynamic-shape form with EVERY own candidate built, not just
// the first: shape-generic kernels that serve build_plans(ALL) and autotuning of any shape with the
// same ops (planning/shipped_kernels.hpp).
// --every NAME.json: that graph (static shapes) with every own candidate built, to audit them all.
// A kernel whose wgmma ptxas serialized (engines/cuda/common/nvrtc_compile.hpp) fails the run: the
// library must not ship one, and an audit lists them with their KernelConfig.
// --batches N,... plans each --dynamic graph also at those batch sizes (the leading dim of every
// tensor that has the graph's batch there): the tour runs its dynamic-shape step at batches 4, 8
// and 16, and the engines' first knobs depend on the size, so each may need its own kernel.
//   dnngraph_aot_gen --out-cpp F.cpp --out-bin F.bin [--cache DIR] [--dynamic NAME.json]...
//                    [--generic NAME.json]... [--every NAME.json]... [--batches 4,8] GRAPH.json...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hash.hpp"
#include "dnngraph/dnngraph.hpp"
#include "planning/aot_plan.hpp"
#include "planning/described_target.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "planning/kernel_cache.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dg = dnngraph;

namespace {

struct Options {
  std::string out_cpp, out_bin, cache;
  std::vector<std::string> graphs, dynamic, generic, every;
  std::vector<int64_t> batches;  // more batch sizes for the --dynamic graphs (0: the file's own)
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& v) { return i + 1 < argc ? (v = argv[++i], true) : false; };
    std::string v;
    if (a == "--out-cpp") { if (!value(o.out_cpp)) return false; }
    else if (a == "--out-bin") { if (!value(o.out_bin)) return false; }
    else if (a == "--cache") { if (!value(o.cache)) return false; }
    else if (a == "--dynamic") { if (!value(v)) return false; o.dynamic.push_back(v); }
    else if (a == "--generic") { if (!value(v)) return false; o.generic.push_back(v); }
    else if (a == "--every") { if (!value(v)) return false; o.every.push_back(v); }
    else if (a == "--batches") {
      if (!value(v)) return false;
      std::stringstream ss(v);
      for (std::string b; std::getline(ss, b, ',');) o.batches.push_back(std::stoll(b));
    }
    else o.graphs.push_back(a);
  }
  return !o.out_cpp.empty() && !o.out_bin.empty();
}

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

bool read_text(const std::string& path, std::string& text) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  text = ss.str();
  return true;
}

// The graph file's text with batch `n` (0: as it is): every tensor whose leading dim is the first
// tensor's gets n there (packed strides of the leading dim do not depend on it).
bool with_batch(std::string& json, int64_t n) {
  if (n == 0) return true;
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.contains("tensors") || j["tensors"].empty()) return false;
  const auto first = j["tensors"][0].value("dim", nlohmann::json::array());
  if (first.empty()) return false;
  const int64_t batch = first[0].get<int64_t>();
  for (auto& t : j["tensors"])
    if (t.contains("dim") && !t["dim"].empty() && t["dim"][0].get<int64_t>() == batch) t["dim"][0] = n;
  json = j.dump();
  return true;
}

// Plans and builds one graph for the described GPU (each own engine's first candidate, or `all`
// of them); the kernels land in `cache`.
bool generate(const std::string& path, bool dynamic, int64_t batch, dg::KernelCacheImpl& cache, dg::HandleImpl& gpu,
              bool all = false) {
  std::string json;
  dg::Graph g;
  if (!read_text(path, json)) return std::fprintf(stderr, "aot: cannot read %s\n", path.c_str()), false;
  if (!with_batch(json, batch)) return std::fprintf(stderr, "aot: %s: no batch dim to set\n", path.c_str()), false;
  if (auto s = dg::Graph::from_json(json, g); !s.ok())
    return std::fprintf(stderr, "aot: %s: %s\n", path.c_str(), s.to_string().c_str()), false;
  g.set_dynamic_shape_enabled(dynamic);
  dg::Handle cpu(dg::Device::cpu());  // lowering reads no device
  if (auto s = g.validate(); !s.ok()) return std::fprintf(stderr, "aot: %s\n", s.to_string().c_str()), false;
  if (auto s = g.build_operation_graph(cpu); !s.ok()) return std::fprintf(stderr, "aot: %s\n", s.to_string().c_str()), false;
  // Only the engines whose kernels can ship: a vendor engine's check on a context-less target is
  // not what it would answer on the GPU, and its plans compile nothing of ours. Leaving them out
  // can only add kernels (the pieces of a partition that only a vendor engine takes whole: a
  // partition is split when no engine but ref takes it), never lose one an own engine builds.
  // ref stays: it takes every partition, which the planner's splitting counts on.
  for (const auto& reg : dg::engine_registry())
    if (reg.engine->compiles_kernels() || reg.engine->name() == "ref")
      dg::impl_of(g).selected_engines.emplace_back(reg.engine->name());
  dg::Target t;
  t.handle = &gpu;
  t.dynamic_shapes = dynamic;
  t.kernel_cache = &cache;
  std::vector<std::string> labels;
  int failed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto build = all ? dg::build_all_own_candidates : dg::build_first_own_candidates;
  if (auto s = build(dg::impl_of(g), t, labels, failed); !s.ok())
    return std::fprintf(stderr, "aot: %s: %s\n", path.c_str(), s.to_string().c_str()), false;
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("aot: %s%s%s: %zu candidates in %.1f s\n", base_name(path).c_str(),
              all ? (dynamic ? " (dynamic, every candidate)" : " (every candidate)") : dynamic ? " (dynamic)" : "",
              batch ? (" at batch " + std::to_string(batch)).c_str() : "", labels.size(), sec);
  for (const auto& l : labels) std::printf("aot:   %s\n", l.c_str());
  return true;
}

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

bool write_outputs(const Options& o, const std::map<std::string, std::vector<uint8_t>>& kernels,
                   const std::string& description) {
  std::string blob;
  std::ostringstream table;
  for (const auto& [key, bin] : kernels) {
    while (blob.size() % 64) blob.push_back('\0');
    table << "    {" << c_string(key) << ", dg_aot_blob + " << blob.size() << ", " << bin.size() << "},\n";
    blob.append(reinterpret_cast<const char*>(bin.data()), bin.size());
  }
  std::ofstream b(o.out_bin, std::ios::binary);
  b.write(blob.data(), static_cast<std::streamsize>(blob.size()));
  std::ostringstream cpp;
  // The blob's hash is in the text, so a compiler cache that hashes only this file sees a new blob.
  cpp << "// Generated by tools/aot/aot_gen.cpp (dnngraph_aot_gen). Do not edit.\n"
      << "// blob " << base_name(o.out_bin) << ": " << blob.size() << " bytes, xxh3 " << std::hex
      << dg::hash64(blob.data(), blob.size()) << std::dec << "\n"
      << "#include \"planning/aot_kernels.hpp\"\n\n";
  if (!kernels.empty())
    cpp << "asm(\".section .rodata\\n.balign 64\\n.hidden dg_aot_blob\\n.globl dg_aot_blob\\ndg_aot_blob:\\n"
        << ".incbin \\\"" << o.out_bin << "\\\"\\n.previous\");\n"
        << "extern \"C\" const unsigned char dg_aot_blob[];\n\n";
  cpp << "namespace dnngraph {\n\n";
  if (kernels.empty()) cpp << "const AotKernel kAotKernels[1] = {{\"\", nullptr, 0}};\n";
  else cpp << "const AotKernel kAotKernels[] = {\n" << table.str() << "};\n";
  cpp << "const size_t kAotKernelCount = " << kernels.size() << ";\n"
      << "const char* const kAotDescription = " << c_string(description) << ";\n\n}  // namespace dnngraph\n";
  std::ofstream c(o.out_cpp + ".tmp");
  c << cpp.str();
  c.close();
  return b.good() && c.good() && std::rename((o.out_cpp + ".tmp").c_str(), o.out_cpp.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: dnngraph_aot_gen --out-cpp F.cpp --out-bin F.bin [--cache DIR] [--dynamic G.json]... G.json...\n");
    return 2;
  }
  std::sort(o.graphs.begin(), o.graphs.end());
  dg::KernelCacheImpl cache;
  if (!o.cache.empty()) cache.set_directory(o.cache);
  std::vector<dg::KernelKey> keys;
  cache.record_keys(&keys, true);
  auto gpu = dg::describe_handle();
  std::map<std::string, std::vector<uint8_t>> kernels;
  std::string description = "sm_90a, 132 SMs (described H200), graphs:";
  if (!dg::cuda::nvrtc()) {
    // Without NVRTC nothing can be compiled; the library is built without AOT kernels.
    std::printf("aot: NVRTC not found (%s): no ahead-of-time kernels\n", dg::cuda::nvrtc_error().c_str());
    return write_outputs(o, kernels, "none (NVRTC was missing at build time)") ? 0 : 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool ok = true;
  for (const auto& path : o.graphs) {
    const bool dyn = std::find(o.dynamic.begin(), o.dynamic.end(), base_name(path)) != o.dynamic.end();
    const bool every = std::find(o.every.begin(), o.every.end(), base_name(path)) != o.every.end();
    ok &= generate(path, false, 0, cache, *gpu, every);
    description += " " + base_name(path) + (every ? "(every candidate)" : "");
    if (std::find(o.generic.begin(), o.generic.end(), base_name(path)) != o.generic.end()) {
      ok &= generate(path, true, 0, cache, *gpu, true);
      description += " " + base_name(path) + "(generic, every candidate)";
    }
    if (!dyn) continue;
    std::vector<int64_t> sizes{0};
    sizes.insert(sizes.end(), o.batches.begin(), o.batches.end());
    for (int64_t b : sizes) {
      ok &= generate(path, true, b, cache, *gpu);
      description += " " + base_name(path) + "(dynamic" + (b ? ", batch " + std::to_string(b) : std::string()) + ")";
    }
  }
  const auto serialized = dg::cuda::serialized_wgmma_compiles();
  for (const auto& what : serialized) std::fprintf(stderr, "aot: ptxas serialized the wgmma of %s\n", what.c_str());
  if (!serialized.empty()) return std::fprintf(stderr, "aot: %zu serialized kernels\n", serialized.size()), 1;
  for (const auto& k : keys) {
    std::vector<uint8_t> bin;
    if (cache.lookup(k, bin)) kernels[k.portable_text()] = std::move(bin);
  }
  size_t bytes = 0;
  for (const auto& [k, b] : kernels) bytes += b.size();
  std::printf("aot: %zu kernels, %zu bytes, in %.1f s\n", kernels.size(), bytes,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!write_outputs(o, kernels, description)) return std::fprintf(stderr, "aot: cannot write the outputs\n"), 1;
  return ok ? 0 : 1;
}
