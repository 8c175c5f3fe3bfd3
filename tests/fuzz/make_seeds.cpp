// Writes seeds for the fuzz targets: OUT_DIR/deserialize/<graph>.plan (serialized plans, made for
// this library version and the fuzz targets' device signature), OUT_DIR/graph_json/<graph>.json,
// and OUT_DIR/execute/seed_<n>: fixed pseudo-random bytes, which fuzz_execute decodes into graphs
// of every anchor kind, so that a short run starts from many shapes rather than from one.
//   fuzz_make_seeds OUT_DIR   (the three folders must exist)
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "fuzz_common.hpp"

namespace dg = dnngraph;

namespace {

dg::TensorPtr tensor(dg::Graph& g, const char* name, int64_t uid, std::vector<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return g.tensor(dg::TensorAttr().set_name(name).set_uid(uid).set_dim(std::move(dims)).set_stride(std::move(strides)));
}

void pointwise(dg::Graph& g) {
  auto x = tensor(g, "X", 1, {2, 3, 4});
  auto b = tensor(g, "B", 2, {1, 3, 1});
  g.relu(g.bias(x, b))->set_output(true).set_uid(3);
}

void conv_bias_relu(dg::Graph& g) {
  auto x = tensor(g, "X", 1, {1, 3, 5, 5});
  auto w = tensor(g, "W", 2, {4, 3, 3, 3});
  auto b = tensor(g, "B", 3, {1, 4, 1, 1});
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
  g.relu(g.bias(y, b))->set_output(true).set_uid(4);
}

void matmul_chain(dg::Graph& g) {
  auto a = tensor(g, "A", 1, {2, 4, 8});
  auto b = tensor(g, "B", 2, {2, 8, 6});
  auto c = tensor(g, "C", 3, {2, 6, 3});
  auto m = g.sigmoid(g.matmul(a, b, dg::MatmulAttr()));
  g.matmul(m, c, dg::MatmulAttr())->set_output(true).set_uid(4);
}

// 64 seeds of 96 bytes from a fixed linear congruential sequence.
void write_execute_seeds(const std::string& dir) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int n = 0; n < 64; ++n) {
    std::string bytes(96, '\0');
    for (char& c : bytes) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      c = static_cast<char>(state >> 56);
    }
    std::ofstream(dir + "/seed_" + std::to_string(n), std::ios::binary) << bytes;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::vector<std::pair<const char*, std::function<void(dg::Graph&)>>> graphs{
      {"pointwise", pointwise}, {"conv_bias_relu", conv_bias_relu}, {"matmul_chain", matmul_chain}};
  const dg::Handle& h = dg::fuzz::fuzz_handle();
  for (const auto& [name, make] : graphs) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
    make(g);
    std::vector<uint8_t> bytes;
    dg::Status s = g.validate();
    if (s.ok()) s = g.build_operation_graph(h);
    if (s.ok()) s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK});
    if (s.ok()) s = g.build_plans(h);
    if (s.ok()) s = g.serialize(bytes);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, s.to_string().c_str());
      return 1;
    }
    const std::string dir = argv[1];
    std::ofstream(dir + "/deserialize/" + name + ".plan", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(dir + "/graph_json/" + name + ".json") << g.to_json();
  }
  write_execute_seeds(std::string(argv[1]) + "/execute");
  return 0;
}
