#include "engines/cublaslt/cublaslt_engine.hpp"

#include <algorithm>
#include <cstring>

#include "core/dtype.hpp"
#include "core/log.hpp"
#include "engines/cublaslt/lt_descriptors.hpp"
#include "planning/calibration.hpp"
#include "runtime/cuda/context.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cublaslt {
namespace {

constexpr uint32_t kPayloadVersion = 1;
constexpr int kRequestedAlgos = 8;

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// cuBLASLt's heuristic results for a partition (those it reports as usable), with their knobs.
struct Survey {
  Status status;
  LtProblem problem;
  std::vector<HeuristicResult> results;
  std::vector<Knobs> knobs;  // parallel to results
};

Survey survey_once(const LtApi& a, SharedLtHandle& sh, const Partition& p) {
  Survey s;
  std::string why;
  if (!match_partition(p, s.problem, why)) {
    s.status = {ErrorCode::GRAPH_NOT_SUPPORTED, why};
    return s;
  }
  LtDescriptors d;
  if (s.status = make_descriptors(a, s.problem, true, d); !s.status.ok()) return s;
  std::vector<HeuristicResult> found(kRequestedAlgos);
  int count = 0;
  if (cublasStatus_t st = a.cublasLtMatmulAlgoGetHeuristic(sh.handle, d.desc, d.a, d.b, d.c, d.d, d.pref,
                                                          kRequestedAlgos, found.data(), &count);
      st != STATUS_SUCCESS) {
    s.status = lt_error(a, st, "cublasLtMatmulAlgoGetHeuristic");
    return s;
  }
  for (int i = 0; i < count; ++i) {
    if (found[static_cast<size_t>(i)].state != STATUS_SUCCESS) continue;
    Knobs k = algo_knobs(a, found[static_cast<size_t>(i)].algo);
    if (std::find(s.knobs.begin(), s.knobs.end(), k) != s.knobs.end()) continue;
    s.results.push_back(found[static_cast<size_t>(i)]);
    s.knobs.push_back(std::move(k));
  }
  if (s.results.empty())
    s.status = {ErrorCode::GRAPH_NOT_SUPPORTED, "cuBLASLt's heuristics offer no algorithm for this matmul (types, "
                                                "layouts and epilogue as given)"};
  return s;
}

// One survey per thread is remembered (check, knob_space and build ask in a row).
std::shared_ptr<const Survey> survey(const Partition& p, const Target& t) {
  thread_local std::string memo_key;
  thread_local std::shared_ptr<const Survey> memo;
  std::string key = std::to_string(p.graph->fingerprint()) + "|" +
                    std::to_string(reinterpret_cast<uintptr_t>(t.handle->cuda->context)) + "|";
  for (int n : p.nodes) key += std::to_string(n) + ",";
  if (memo && key == memo_key) return memo;
  auto out = std::make_shared<Survey>();
  SharedLtHandle* sh = nullptr;
  if (out->status = shared_lt_handle(*api(), *t.handle, sh); out->status.ok()) {
    std::lock_guard<std::mutex> lock(sh->mutex);
    *out = survey_once(*api(), *sh, p);
  }
  memo_key = std::move(key);
  memo = out;
  return memo;
}

class LtPlan final : public Plan {
 public:
  LtPlan(const Partition& p, SharedLtHandle* sh, cuda::CUcontext ctx, const LtProblem& problem, MatmulAlgo algo,
         int64_t algo_workspace, std::unique_ptr<LtDescriptors> d)
      : sh_(sh), ctx_(ctx), pr_(problem), algo_(algo), algo_ws_(algo_workspace), d_(std::move(d)) {
    if (pr_.alpha >= 0) alpha_type_ = p.tensor(pr_.alpha).dtype;
    d_offset_ = pr_.d_in_workspace ? round_up(pr_.d_bytes, 256) : 0;
    names_ = {p.tensor(pr_.b.id).name, p.tensor(pr_.a.id).name, p.tensor(pr_.d.id).name};
  }

  int64_t workspace_size() const override { return d_offset_ + algo_ws_; }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda || h.cuda->context != ctx_)
      return {ErrorCode::GRAPH_EXECUTION_FAILED, "cublaslt: the plan runs on the CUDA device it was built for"};
    if (workspace_size() > 0 && !args.workspace)
      return {ErrorCode::WORKSPACE_TOO_SMALL, "cublaslt: the plan needs workspace but it is null"};
    auto ptr = [&](int id) { return args.ptrs[static_cast<size_t>(id)]; };
    char* ws = static_cast<char*>(args.workspace);
    void* dst = pr_.d_in_workspace ? ws : ptr(pr_.d.id);
    const void* operands[] = {ptr(pr_.b.id), ptr(pr_.a.id), dst};
    for (int i = 0; i < 3; ++i)
      if (!operands[i] || reinterpret_cast<uintptr_t>(operands[i]) % kAlignment != 0)
        return {ErrorCode::INVALID_VARIANT_PACK, "cublaslt: tensor '" + names_[i] + "' is null or not " +
                                                     std::to_string(kAlignment) + "-byte aligned"};
    const float alpha = pr_.alpha >= 0 ? static_cast<float>(dtype::load(ptr(pr_.alpha), alpha_type_, 0)) : 1.0f;
    const float beta = 0.0f;
    if (auto s = cuda::make_current(h); !s.ok()) return s;
    const LtApi& a = *api();
    std::lock_guard<std::mutex> lock(sh_->mutex);
    if (pr_.bias >= 0) {
      void* bias = ptr(pr_.bias);
      if (auto s = set_pointer(DescAttr::BIAS_POINTER, bias, bias_); !s.ok()) return s;
    }
    if (pr_.amax >= 0) {
      void* amax = ptr(pr_.amax);
      if (auto s = set_pointer(DescAttr::AMAX_D_POINTER, amax, amax_); !s.ok()) return s;
    }
    if (cublasStatus_t s = a.cublasLtMatmul(sh_->handle, d_->desc, &alpha, operands[1], d_->a, operands[0], d_->b,
                                            &beta, dst, d_->c, dst, d_->d, &algo_,
                                            algo_ws_ > 0 ? ws + d_offset_ : nullptr, static_cast<size_t>(algo_ws_),
                                            h.stream);
        s != STATUS_SUCCESS)
      return lt_error(a, s, "cublasLtMatmul", ErrorCode::GRAPH_EXECUTION_FAILED);
    return {};
  }

  void serialize(ByteWriter& w) const override {
    w.put(kPayloadVersion);
    w.put(static_cast<uint64_t>(library_report().version));
    w.put(algo_);
  }

 private:
  // Sets a pointer attribute of the shared descriptor when it changed (under sh_->mutex).
  Status set_pointer(DescAttr attr, void* p, void*& cached) const {
    if (p == cached) return {};
    if (cublasStatus_t s = api()->cublasLtMatmulDescSetAttribute(d_->desc, static_cast<int>(attr), &p, sizeof(p));
        s != STATUS_SUCCESS)
      return lt_error(*api(), s, "cublasLtMatmulDescSetAttribute", ErrorCode::GRAPH_EXECUTION_FAILED);
    cached = p;
    return {};
  }

  SharedLtHandle* sh_;
  cuda::CUcontext ctx_;
  LtProblem pr_;
  MatmulAlgo algo_;
  int64_t algo_ws_ = 0, d_offset_ = 0;
  DataType alpha_type_ = DataType::FLOAT;
  std::unique_ptr<LtDescriptors> d_;
  std::vector<std::string> names_;
  mutable void* bias_ = nullptr;
  mutable void* amax_ = nullptr;
};

// Checks `algo` against the problem; its workspace need on success.
Status check_algo(const LtApi& a, SharedLtHandle& sh, const LtDescriptors& d, const MatmulAlgo& algo, int64_t& ws) {
  HeuristicResult r{};
  if (cublasStatus_t s = a.cublasLtMatmulAlgoCheck(sh.handle, d.desc, d.a, d.b, d.c, d.d, &algo, &r);
      s != STATUS_SUCCESS)
    return lt_error(a, s, "cublasLtMatmulAlgoCheck", ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED);
  ws = static_cast<int64_t>(r.workspace_size);
  return {};
}

class CublasLtEngine final : public Engine {
 public:
  std::string_view name() const override { return "cublaslt"; }

  Support check(const Partition& p, const Target& t) const override {
    if (!t.device().is_cuda() || !t.handle->cuda)
      return Support::no("runs on CUDA handles; this one is " + t.device().to_string());
    LtProblem problem;
    std::string why;
    if (!match_partition(p, problem, why)) return Support::no(why);
    if (!api()) return Support::no(error() + ": using dnngraph's own engines");
    auto s = survey(p, t);
    if (!s->status.ok()) return Support::no(s->status.message());
    return Support::yes();
  }

  Status check_knobs(const Knobs& k) const override { return check_algo_knobs(k); }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    if (!api() || !t.handle->cuda) return {};
    return survey(p, t)->knobs;
  }

  // cuBLASLt's 16-bit, 8-bit and TF32 GEMMs run on tensor cores (exact FLOAT does not). Its
  // split-K reduction schemes add the splits in a fixed order (in place: counters sequence them).
  std::vector<NumericalNote> numerical_notes(const Partition& p, const Target&, const Knobs&) const override {
    std::vector<NumericalNote> out;
    const Precision prec = operand_precision(p);
    if (prec != Precision::SINGLE) out.push_back(NumericalNote::TENSOR_CORE);
    if (prec == Precision::TF32) out.push_back(NumericalNote::DOWN_CONVERT_INPUTS);
    return out;
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // cuBLASLt's own order is kept (equal estimates); its GEMMs reach ~0.7 of the bf16 peak on the
    // H200 anchors, discounted like cudnn's so that own engines win ties and autotune settles it.
    return roofline_seconds(partition_flops(p), partition_bytes(p), t.info(), 0.6, 6e-6);
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    if (!api()) return {ErrorCode::GRAPH_NOT_SUPPORTED, error()};
    auto sv = survey(p, t);
    if (!sv->status.ok()) return sv->status;
    MatmulAlgo algo{};
    bool found = false;
    for (size_t i = 0; i < sv->knobs.size() && !found; ++i)
      if (sv->knobs[i] == k) {
        algo = sv->results[i].algo;
        found = true;
      }
    return make(p, t, sv->problem, k, found ? &algo : nullptr, plan);
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const override {
    if (!api()) return {ErrorCode::GRAPH_NOT_SUPPORTED, error()};
    const auto payload_version = r.get<uint32_t>();
    const auto lt_version = r.get<uint64_t>();
    const auto algo = r.get<MatmulAlgo>();
    if (!r.ok() || payload_version != kPayloadVersion)
      return {ErrorCode::SERIALIZATION_FAILED, "cublaslt: the plan payload is truncated or of another version"};
    LtProblem problem;
    std::string why;
    if (!match_partition(p, problem, why)) return {ErrorCode::SERIALIZATION_FAILED, "cublaslt: " + why};
    // The algorithm struct is only meaningful to the cuBLASLt that made it; otherwise rebuild from knobs.
    const bool same = lt_version == library_report().version;
    if (!same) {
      DG_LOG(INFO) << "cublaslt: the plan was made with cuBLASLt " << lt_version << ", this is " << library_report().version
                   << ": rebuilding the algorithm from its knobs";
    }
    return make(p, t, problem, k, same ? &algo : nullptr, plan);
  }

 private:
  static Status make(const Partition& p, const Target& t, const LtProblem& problem, const Knobs& k,
                     const MatmulAlgo* given, std::unique_ptr<Plan>& plan) {
    const LtApi& a = *api();
    SharedLtHandle* sh = nullptr;
    if (auto s = shared_lt_handle(a, *t.handle, sh); !s.ok()) return s;
    auto d = std::make_unique<LtDescriptors>();
    if (auto s = make_descriptors(a, problem, true, *d); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(sh->mutex);
    MatmulAlgo algo{};
    if (given) {
      algo = *given;
    } else if (auto s = algo_from_knobs(a, sh->handle, problem, k, algo); !s.ok()) {
      return s;
    }
    int64_t ws = 0;
    if (auto s = check_algo(a, *sh, *d, algo, ws); !s.ok())
      return {s.code(), "cublaslt[" + knobs_to_string(k) + "]: " + s.message()};
    plan = std::make_unique<LtPlan>(p, sh, t.handle->cuda->context, problem, algo, ws, std::move(d));
    return {};
  }
};

}  // namespace

const Engine& engine() { return engine_instance<CublasLtEngine>(); }

}  // namespace dnngraph::cublaslt
