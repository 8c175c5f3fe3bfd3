#include "host_tensors.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "core/dtype.hpp"
#include "graphs.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cli {

namespace {

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
  std::vector<introspect::TensorView> views;
  if (auto s = introspect::tensors(g, views); !s.ok()) return {s.code(), "make_host_tensors: call build_operation_graph first"};
  out.clear();
  for (const auto& t : views) {
    if (t.is_virtual || (t.is_pass_by_value && t.has_value)) continue;
    HostTensor h(t);
    h.bytes.assign(static_cast<size_t>(std::max<int64_t>(t.span_bytes, size_of(t.dtype))), 0);
    if (!h.is_output()) fill_random(h, seed, t.seq_len_bound);  // sdpa's SEQ_LEN inputs: lengths in [1, seq]
    out.push_back(std::move(h));
  }
  return {};
}

Status copy_inputs(const std::vector<HostTensor>& src, std::vector<HostTensor>& dst) {
  for (auto& d : dst) {
    if (d.is_output()) continue;
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
  HandleImpl& impl = impl_of(*handle_);
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
    if (!t.is_output())
      if (auto s = memory::copy_to_device(impl, buffers_.back().get(), t.bytes.data(), t.bytes.size()); !s.ok()) return s;
  }
  return poison_outputs();
}

Status DeviceTensors::poison_outputs(uint8_t int_poison) {
  for (size_t i = 0; i < layout_.size(); ++i) {
    const HostTensor& t = layout_[i];
    if (!t.is_output()) continue;
    std::vector<uint8_t> poison(t.bytes.size(), int_poison);
    if (is_floating(t.dtype))
      for (int64_t k = 0; k < elements_in(t); ++k) dtype::store(poison.data(), t.dtype, k, std::nan(""));
    if (auto s = memory::copy_to_device(impl_of(*handle_), buffers_[i].get(), poison.data(), poison.size()); !s.ok())
      return s;
  }
  return {};
}

Status DeviceTensors::download_outputs(std::vector<HostTensor>& host) const {
  for (size_t i = 0; i < layout_.size(); ++i) {
    if (!layout_[i].is_output()) continue;
    auto it = std::find_if(host.begin(), host.end(), [&](const HostTensor& t) { return t.uid == layout_[i].uid; });
    if (it == host.end() || it->bytes.size() != layout_[i].bytes.size())
      return {ErrorCode::INVALID_VALUE, "download_outputs: no matching host tensor for '" + layout_[i].name + "'"};
    if (auto s = memory::copy_to_host(impl_of(*handle_), it->bytes.data(), buffers_[i].get(), it->bytes.size()); !s.ok())
      return s;
  }
  return {};
}

Status DeviceTensors::reserve_workspace(int64_t bytes) {
  if (!handle_) return {ErrorCode::INVALID_CALL_ORDER, "reserve_workspace: call upload first"};
  if (bytes <= workspace_bytes() && workspace_.get()) return {};
  workspace_ = memory::Buffer(impl_of(*handle_), static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  return workspace_.status();
}

Status execute_built(const Graph& g, const Handle& h, std::vector<HostTensor>& tensors) {
  DeviceTensors dev;
  if (auto s = dev.upload(h, tensors); !s.ok()) return s;
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  if (auto s = dev.reserve_workspace(ws); !s.ok()) return s;
  if (auto s = g.execute(h, dev.pack(), dev.workspace(), dev.workspace_bytes()); !s.ok()) return s;
  return dev.download_outputs(tensors);
}

Status run_once(Graph& g, const Handle& h, std::vector<HostTensor>& tensors) {
  if (auto s = build_graph(g, h); !s.ok()) return s;
  return execute_built(g, h, tensors);
}

// ---- timing

Status time_runs(const Handle& h, int iters, const std::function<Status()>& fn, Timing& out) {
  using clock = std::chrono::steady_clock;
  iters = std::max(iters, 1);
  HandleImpl& hi = impl_of(h);
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

}  // namespace dnngraph::cli
