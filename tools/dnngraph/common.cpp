#include "common.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "core/dtype.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cli {

void exit_on_error(const Status& s, const std::string& what) {
  if (s.ok()) return;
  std::cerr << "error: " << what << ": " << s.to_string() << "\n";
  throw CLI::RuntimeError(kExitError);
}

// ---- devices and graphs

Status parse_device(const std::string& text, Device& out) {
  if (text == "cpu") {
    out = Device::cpu();
    return {};
  }
  if (text == "cuda") {
    out = Device::cuda(0);
    return {};
  }
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 9 &&
      std::all_of(text.begin() + 5, text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    out = Device::cuda(std::stoi(text.substr(5)));
    return {};
  }
  return {ErrorCode::INVALID_VALUE, "device '" + text + "' is not one of cpu, cuda, cuda:N"};
}

Device best_device(std::string& why_not_cuda) {
  Handle cuda(Device::cuda(0));
  if (cuda.status().ok()) {
    why_not_cuda.clear();
    return Device::cuda(0);
  }
  why_not_cuda = cuda.status().message();
  return Device::cpu();
}

Status read_text_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {ErrorCode::IO_ERROR, "cannot open '" + path + "' for reading"};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return {ErrorCode::IO_ERROR, "error while reading '" + path + "'"};
  text = ss.str();
  return {};
}

Status load_graph_file(const std::string& path, Graph& graph) {
  std::string text;
  if (auto s = read_text_file(path, text); !s.ok()) return s;
  if (auto s = Graph::from_json(text, graph); !s.ok()) return {s.code(), path + ": " + s.message()};
  return {};
}

Status plan_graph(Graph& g, const Handle& h) {
  if (auto s = g.validate(); !s.ok()) return s;
  if (auto s = g.build_operation_graph(h); !s.ok()) return s;
  if (auto s = g.create_execution_plans({HeurMode::A, HeurMode::FALLBACK}); !s.ok()) return s;
  return g.check_support(h);
}

Status build_graph(Graph& g, const Handle& h, BuildPlanPolicy policy, int64_t plan_index) {
  if (auto s = plan_graph(g, h); !s.ok()) return s;
  return plan_index < 0 ? g.build_plans(h, policy) : g.build_plan_at_index(h, plan_index);
}

std::vector<std::string> plan_names(const Graph& g) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    if (!g.get_plan_name_at_index(i, name).ok()) name = "?";
    out.push_back("plan " + std::to_string(i) + ": " + name);
  }
  return out;
}

std::vector<std::string> partition_lines(const Graph& g) {
  std::vector<std::string> out;
  const auto& plans = g.impl().plans;
  if (!plans) return out;
  for (size_t i = 0; i < plans->parts.size(); ++i) {
    const auto& pp = plans->parts[i];
    std::string line = "partition " + std::to_string(i) + " (" + pp.partition.pattern + "):";
    for (size_t k = 0; k < pp.partition.nodes.size(); ++k) line += (k ? ", " : " ") + pp.partition.node(k).name;
    line += " -> " + std::to_string(pp.candidates.size()) + " candidate" + (pp.candidates.size() == 1 ? "" : "s");
    if (!pp.candidates.empty()) line += ", chosen " + pp.candidates[static_cast<size_t>(pp.chosen)].label();
    out.push_back(line);
  }
  return out;
}

bool chosen_plan_uses(const Graph& g, const std::string& engine) {
  const auto& plans = g.impl().plans;
  const int id = engine_id_by_name(engine);
  if (!plans || id < 0) return false;
  for (const auto& pp : plans->parts)
    if (!pp.candidates.empty() && pp.candidates[static_cast<size_t>(pp.chosen)].engine_id == id) return true;
  return false;
}

double graph_flops(const Graph& g) {
  const auto& plans = g.impl().plans;
  double flops = 0;
  if (plans)
    for (const auto& pp : plans->parts) flops += partition_flops(pp.partition);
  return flops;
}

// ---- tensors

namespace {

// Calls fn(offset_a, offset_b) for every index of `dims` in row-major order.
template <class Fn>
void for_each_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                     Fn&& fn) {
  for (int64_t d : dims)
    if (d <= 0) return;
  const size_t rank = dims.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  while (true) {
    fn(oa, ob);
    size_t k = rank;
    while (true) {
      if (k == 0) return;  // every dim wrapped around: done (rank 0 has one element)
      --k;
      if (++idx[k] < dims[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * (dims[k] - 1);
      ob -= sb[k] * (dims[k] - 1);
      idx[k] = 0;
    }
  }
}

int64_t elements_in(const HostTensor& t) {
  const int64_t size = size_of(t.dtype);
  return size > 0 ? static_cast<int64_t>(t.bytes.size()) / size : 0;
}

void fill_random(HostTensor& t, uint64_t seed, int64_t max_seq_len) {
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(t.uid) * 7919u + 1u);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  const int64_t n = elements_in(t);
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (max_seq_len > 0) v = static_cast<double>(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_seq_len)));
    else if (t.dtype == DataType::BOOLEAN) v = static_cast<double>(rng() & 1u);
    else if (t.dtype == DataType::UINT8) v = static_cast<double>(rng() % 17u);
    else if (is_integral(t.dtype)) v = static_cast<double>(static_cast<int64_t>(rng() % 17u) - 8);
    else v = real(rng);
    dtype::store(t.bytes.data(), t.dtype, i, v);
  }
}

}  // namespace

int64_t HostTensor::volume() const {
  int64_t v = 1;
  for (int64_t d : dims) v *= d;
  return v;
}

double HostTensor::at(int64_t i) const {
  int64_t offset = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    offset += (i % dims[k]) * strides[k];
    i /= dims[k];
  }
  return dtype::load(bytes.data(), dtype, offset);
}

Status make_host_tensors(const Graph& g, uint64_t seed, std::vector<HostTensor>& out) {
  const auto& ir = g.impl().ir;
  if (!ir) return {ErrorCode::INVALID_CALL_ORDER, "make_host_tensors: call build_operation_graph first"};
  // Sequence-length inputs of sdpa hold lengths in [1, seq].
  std::map<int, int64_t> seq_len_max;
  for (const auto& n : ir->nodes) {
    if (!std::holds_alternative<SdpaAttr>(n.attr)) continue;
    auto note = [&](size_t slot_index, size_t like) {
      if (slot_index < n.inputs.size() && n.inputs[slot_index] >= 0 && n.inputs[like] >= 0) {
        const auto& dims = ir->tensor(n.inputs[like]).dims;
        if (dims.size() > 2) seq_len_max[n.inputs[slot_index]] = dims[2];
      }
    };
    note(slot::SDPA_SEQ_Q, slot::SDPA_Q);
    note(slot::SDPA_SEQ_KV, slot::SDPA_K);
  }
  out.clear();
  for (const auto& t : ir->tensors) {
    if (t.is_virtual || (t.is_pass_by_value && t.has_value)) continue;
    HostTensor h;
    h.uid = t.uid;
    h.name = t.name;
    h.dtype = t.dtype;
    h.dims = t.dims;
    h.strides = t.strides;
    h.is_output = t.producer >= 0;
    h.is_pass_by_value = t.is_pass_by_value;
    h.bytes.assign(static_cast<size_t>(std::max<int64_t>(t.span_bytes(), size_of(t.dtype))), 0);
    if (!h.is_output) {
      auto it = seq_len_max.find(t.id);
      fill_random(h, seed, it == seq_len_max.end() ? 0 : it->second);
    }
    out.push_back(std::move(h));
  }
  return {};
}

Status copy_inputs(const std::vector<HostTensor>& src, std::vector<HostTensor>& dst) {
  for (auto& d : dst) {
    if (d.is_output) continue;
    auto it = std::find_if(src.begin(), src.end(), [&](const HostTensor& s) { return s.uid == d.uid; });
    if (it == src.end())
      return {ErrorCode::INVALID_VALUE, "tensor '" + d.name + "' (uid " + std::to_string(d.uid) + ") has no input data"};
    if (it->bytes.size() != d.bytes.size() || it->dtype != d.dtype)
      return {ErrorCode::INVALID_VALUE, "tensor '" + d.name + "' (uid " + std::to_string(d.uid) +
                                            ") differs in type or layout between the two graphs"};
    d.bytes = it->bytes;
  }
  return {};
}

Status DeviceTensors::upload(const Handle& h, const std::vector<HostTensor>& host) {
  handle_ = std::make_unique<Handle>(h);
  layout_ = host;
  buffers_.clear();
  host_scalars_.assign(host.size(), {});
  pack_.clear();
  HandleImpl& impl = handle_->impl();
  for (size_t i = 0; i < host.size(); ++i) {
    const HostTensor& t = host[i];
    buffers_.emplace_back();
    if (t.is_pass_by_value) {  // a host scalar, whatever the device
      host_scalars_[i] = t.bytes;
      pack_[t.uid] = host_scalars_[i].data();
      continue;
    }
    buffers_.back() = memory::Buffer(impl, t.bytes.size());
    if (!buffers_.back().status().ok()) return buffers_.back().status();
    pack_[t.uid] = buffers_.back().get();
    if (!t.is_output)
      if (auto s = memory::copy_to_device(impl, buffers_.back().get(), t.bytes.data(), t.bytes.size()); !s.ok()) return s;
  }
  return poison_outputs();
}

Status DeviceTensors::poison_outputs(uint8_t int_poison) {
  for (size_t i = 0; i < layout_.size(); ++i) {
    const HostTensor& t = layout_[i];
    if (!t.is_output) continue;
    std::vector<uint8_t> poison(t.bytes.size(), int_poison);
    if (is_floating(t.dtype))
      for (int64_t k = 0; k < elements_in(t); ++k) dtype::store(poison.data(), t.dtype, k, std::nan(""));
    if (auto s = memory::copy_to_device(handle_->impl(), buffers_[i].get(), poison.data(), poison.size()); !s.ok())
      return s;
  }
  return {};
}

Status DeviceTensors::download_outputs(std::vector<HostTensor>& host) const {
  for (size_t i = 0; i < layout_.size(); ++i) {
    if (!layout_[i].is_output) continue;
    auto it = std::find_if(host.begin(), host.end(), [&](const HostTensor& t) { return t.uid == layout_[i].uid; });
    if (it == host.end() || it->bytes.size() != layout_[i].bytes.size())
      return {ErrorCode::INVALID_VALUE, "download_outputs: no matching host tensor for '" + layout_[i].name + "'"};
    if (auto s = memory::copy_to_host(handle_->impl(), it->bytes.data(), buffers_[i].get(), it->bytes.size()); !s.ok())
      return s;
  }
  return {};
}

Status DeviceTensors::reserve_workspace(int64_t bytes) {
  if (!handle_) return {ErrorCode::INVALID_CALL_ORDER, "reserve_workspace: call upload first"};
  if (bytes <= workspace_bytes() && workspace_.get()) return {};
  workspace_ = memory::Buffer(handle_->impl(), static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  return workspace_.status();
}

namespace {
Status execute_built(const Graph& g, const Handle& h, std::vector<HostTensor>& tensors) {
  DeviceTensors dev;
  if (auto s = dev.upload(h, tensors); !s.ok()) return s;
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  if (auto s = dev.reserve_workspace(ws); !s.ok()) return s;
  if (auto s = g.execute(h, dev.pack(), dev.workspace(), dev.workspace_bytes()); !s.ok()) return s;
  return dev.download_outputs(tensors);
}
}  // namespace

Status run_once(Graph& g, const Handle& h, std::vector<HostTensor>& tensors) {
  if (auto s = build_graph(g, h); !s.ok()) return s;
  return execute_built(g, h, tensors);
}

// ---- timing

Status time_runs(const Handle& h, int iters, const std::function<Status()>& fn, Timing& out) {
  using clock = std::chrono::steady_clock;
  iters = std::max(iters, 1);
  HandleImpl& hi = h.impl();
  if (auto s = fn(); !s.ok()) return s;
  if (auto s = memory::synchronize(hi); !s.ok()) return s;
  // On a GPU, events on the stream measure the work itself, not the launch and the wait.
  std::unique_ptr<cuda::EventTimer> timer;
  if (h.device().is_cuda())
    if (auto s = cuda::EventTimer::create(hi, timer); !s.ok()) return s;
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = clock::now();
    if (timer)
      if (auto s = timer->start(); !s.ok()) return s;
    if (auto s = fn(); !s.ok()) return s;
    double seconds = 0;
    if (timer) {
      if (auto s = timer->stop(); !s.ok()) return s;
      if (auto s = timer->seconds(seconds); !s.ok()) return s;
    } else {
      if (auto s = memory::synchronize(hi); !s.ok()) return s;
      seconds = std::chrono::duration<double>(clock::now() - t0).count();
    }
    times.push_back(seconds);
  }
  std::sort(times.begin(), times.end());
  out.iters = iters;
  out.min_s = times.front();
  out.median_s = times[times.size() / 2];
  return {};
}

std::string format_seconds(double s) {
  char buf[64];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1.0) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string format_rate(double flops, double s) {
  if (flops <= 0 || s <= 0) return "";
  const double rate = flops / s;
  char buf[64];
  if (rate >= 1e12) std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", rate / 1e12);
  else std::snprintf(buf, sizeof buf, "%.2f GFLOP/s", rate / 1e9);
  return buf;
}

// ---- checking

Status run_reference(const std::string& graph_json, const std::vector<HostTensor>& inputs,
                     std::vector<HostTensor>& outputs) {
  Graph ref;
  if (auto s = Graph::from_json(graph_json, ref); !s.ok()) return s;
  ref.select_engines({"ref"});
  Handle cpu(Device::cpu());
  if (auto s = build_graph(ref, cpu); !s.ok()) return s;
  std::vector<HostTensor> tensors;
  if (auto s = make_host_tensors(ref, 0, tensors); !s.ok()) return s;
  if (auto s = copy_inputs(inputs, tensors); !s.ok()) return s;
  if (auto s = execute_built(ref, cpu, tensors); !s.ok()) return s;
  outputs = std::move(tensors);
  return {};
}

double tolerance_of(DataType t) {
  switch (t) {
    case DataType::DOUBLE: return 1e-12;
    // fp32 engines reorder sums and use Winograd transforms; errors relative to the output's scale
    // reach 1e-5 on large graphs, so fp32 gets headroom. Real bugs are orders of magnitude larger.
    case DataType::FLOAT: return 1e-4;
    case DataType::HALF: return 3e-3;
    case DataType::BFLOAT16: return 1e-2;
    case DataType::FP8_E4M3: return 1.25e-1;
    case DataType::FP8_E5M2: return 2.5e-1;
    default: return 0;
  }
}

double graph_tolerance(const Graph& g) {
  double tol = tolerance_of(DataType::FLOAT);
  const auto& ir = g.impl().ir;
  if (!ir) return tol;
  for (const auto& t : ir->tensors)
    if (t.producer >= 0) tol = std::max(tol, tolerance_of(t.dtype));
  bool attention = false;
  for (const auto& n : ir->nodes) {
    tol = std::max(tol, tolerance_of(n.compute_type));
    attention |= std::holds_alternative<SdpaAttr>(n.attr);
  }
  // Flash attention rounds the softmax probabilities to the input type before the product with V
  // (PyTorch's flash, cuDNN and efficient backends alike): on the tour's data they reach 3.3e-2 of
  // this metric in bf16, so attention outputs get 4x the type's tolerance.
  return attention ? 4 * tol : tol;
}

double checksum(const HostTensor& t) {
  double sum = 0;
  for_each_offset(t.dims, t.strides, t.strides, [&](int64_t o, int64_t) { sum += dtype::load(t.bytes.data(), t.dtype, o); });
  return sum;
}

Comparison compare_tensors(const HostTensor& got, const HostTensor& ref, double tolerance) {
  Comparison c;
  c.name = got.name;
  c.uid = got.uid;
  c.tolerance = is_integral(got.dtype) ? 0.0 : tolerance;
  if (got.dims != ref.dims || got.dtype != ref.dtype) {
    c.mismatches = std::max<int64_t>(got.volume(), 1);
    return c;
  }
  double mean_abs = 0;
  int64_t finite = 0;
  for_each_offset(ref.dims, ref.strides, ref.strides, [&](int64_t o, int64_t) {
    const double r = dtype::load(ref.bytes.data(), ref.dtype, o);
    c.ref_checksum += r;
    if (std::isfinite(r)) {
      mean_abs += std::fabs(r);
      ++finite;
    }
  });
  mean_abs = finite ? mean_abs / static_cast<double>(finite) : 0.0;
  for_each_offset(got.dims, got.strides, ref.strides, [&](int64_t og, int64_t oref) {
    const double x = dtype::load(got.bytes.data(), got.dtype, og);
    const double r = dtype::load(ref.bytes.data(), ref.dtype, oref);
    ++c.elements;
    c.checksum += x;
    if (std::isnan(x) && std::isnan(r)) return;
    if (x == r) return;  // equal infinities too
    const double diff = std::fabs(x - r);
    const double denom = std::fabs(r) + mean_abs;
    const double rel = std::isnan(diff) ? HUGE_VAL : (denom > 0 ? diff / denom : HUGE_VAL);
    if (!std::isnan(diff)) c.max_abs = std::max(c.max_abs, diff);
    c.max_rel = std::max(c.max_rel, rel);
    if (!(rel <= c.tolerance)) ++c.mismatches;
  });
  c.ok = c.mismatches == 0;
  return c;
}

Status compare_outputs(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref, double tolerance,
                       std::vector<Comparison>& out) {
  out.clear();
  for (const auto& g : got) {
    if (!g.is_output) continue;
    auto it = std::find_if(ref.begin(), ref.end(), [&](const HostTensor& r) { return r.uid == g.uid && r.is_output; });
    if (it == ref.end())
      return {ErrorCode::INVALID_VALUE, "output '" + g.name + "' (uid " + std::to_string(g.uid) + ") has no reference"};
    out.push_back(compare_tensors(g, *it, tolerance));
  }
  return {};
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string format_comparison(const Comparison& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "max abs err %.3e, max rel err %.3e (tol %.0e), checksum %.6e (ref %.6e): ",
                c.max_abs, c.max_rel, c.tolerance, c.checksum, c.ref_checksum);
  std::string verdict = c.ok ? "ok" : "MISMATCH in " + std::to_string(c.mismatches) + " of " + std::to_string(c.elements) + " elements";
  return "'" + c.name + "': " + buf + verdict;
}

}  // namespace dnngraph::cli
