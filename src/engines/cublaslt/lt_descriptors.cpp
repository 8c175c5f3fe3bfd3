#include "engines/cublaslt/lt_descriptors.hpp"

#include <cstdint>
#include <map>

#include "core/log.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cublaslt {
namespace {

// Config attributes in knob order, with their value sizes and the default a knob may leave out.
struct AlgoField {
  const char* knob;
  AlgoAttr attr;
  size_t size;
  int64_t omit_value;  // left out of the knobs when equal; -1: always present
};
constexpr AlgoField kFields[] = {
    {"algo", AlgoAttr::ID, 4, -1},
    {"tile", AlgoAttr::TILE_ID, 4, -1},
    {"stages", AlgoAttr::STAGES_ID, 4, -1},
    {"splitk", AlgoAttr::SPLITK_NUM, 4, 1},
    {"reduction", AlgoAttr::REDUCTION_SCHEME, 4, 0},
    {"swizzle", AlgoAttr::CTA_SWIZZLING, 4, 0},
    {"custom", AlgoAttr::CUSTOM_OPTION, 4, 0},
    {"inner_shape", AlgoAttr::INNER_SHAPE_ID, 2, 0},
    {"cluster", AlgoAttr::CLUSTER_SHAPE_ID, 2, 0},
};

int64_t read_field(const LtApi& api, const MatmulAlgo& algo, const AlgoField& f) {
  uint32_t v32 = 0;
  uint16_t v16 = 0;
  size_t written = 0;
  void* buf = f.size == 2 ? static_cast<void*>(&v16) : static_cast<void*>(&v32);
  if (api.cublasLtMatmulAlgoConfigGetAttribute(&algo, static_cast<int>(f.attr), buf, f.size, &written) !=
      STATUS_SUCCESS)
    return f.omit_value < 0 ? 0 : f.omit_value;  // an attribute this cuBLASLt lacks: its default
  if (f.attr == AlgoAttr::ID || f.attr == AlgoAttr::SPLITK_NUM) return static_cast<int32_t>(v32);
  return f.size == 2 ? v16 : v32;
}

template <class T>
Status set_desc(const LtApi& api, MatmulDesc d, DescAttr a, T v, const char* what) {
  if (cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(d, static_cast<int>(a), &v, sizeof(v)); s != STATUS_SUCCESS)
    return lt_error(api, s, std::string("cublasLtMatmulDescSetAttribute(") + what + ")");
  return {};
}

Status make_layout(const LtApi& api, const Matrix& m, CudaType type, int64_t batch, MatrixLayout& out) {
  if (cublasStatus_t s = api.cublasLtMatrixLayoutCreate(&out, static_cast<int>(type), m.rows, m.cols, m.ld);
      s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatrixLayoutCreate");
  if (batch <= 1) return {};
  const int32_t count = static_cast<int32_t>(batch);
  const int64_t stride = m.batch_stride;
  if (cublasStatus_t s = api.cublasLtMatrixLayoutSetAttribute(out, static_cast<int>(LayoutAttr::BATCH_COUNT), &count,
                                                             sizeof(count));
      s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
  if (cublasStatus_t s = api.cublasLtMatrixLayoutSetAttribute(
          out, static_cast<int>(LayoutAttr::STRIDED_BATCH_OFFSET), &stride, sizeof(stride));
      s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  return {};
}

}  // namespace

Status lt_error(const LtApi& api, cublasStatus_t s, const std::string& what, ErrorCode code) {
  return {code, "cuBLASLt: " + what + ": " + status_text(api, s)};
}

LtDescriptors::~LtDescriptors() {
  if (!api) return;
  if (desc) api->cublasLtMatmulDescDestroy(desc);
  for (MatrixLayout l : {a, b, c, d})
    if (l) api->cublasLtMatrixLayoutDestroy(l);
  if (pref) api->cublasLtMatmulPreferenceDestroy(pref);
}

Status make_descriptors(const LtApi& api, const LtProblem& p, bool placeholder_amax, LtDescriptors& out) {
  out.api = &api;
  if (cublasStatus_t s = api.cublasLtMatmulDescCreate(&out.desc, static_cast<int>(p.compute), static_cast<int>(p.scale));
      s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatmulDescCreate");
  if (auto s = set_desc(api, out.desc, DescAttr::TRANSA, static_cast<int32_t>(p.a.op), "TRANSA"); !s.ok()) return s;
  if (auto s = set_desc(api, out.desc, DescAttr::TRANSB, static_cast<int32_t>(p.b.op), "TRANSB"); !s.ok()) return s;
  if (auto s = set_desc(api, out.desc, DescAttr::EPILOGUE, static_cast<uint32_t>(p.epilogue), "EPILOGUE"); !s.ok())
    return s;
  if (p.bias >= 0 && p.bias_type != p.d.type) {
    if (auto s = set_desc(api, out.desc, DescAttr::BIAS_DATA_TYPE, static_cast<int32_t>(p.bias_type), "BIAS_DATA_TYPE");
        !s.ok())
      return s;
  }
  if (p.amax >= 0 && placeholder_amax) {
    void* stand_in = reinterpret_cast<void*>(uintptr_t{256});
    if (auto s = set_desc(api, out.desc, DescAttr::AMAX_D_POINTER, stand_in, "AMAX_D_POINTER"); !s.ok()) return s;
  }
  if (auto s = make_layout(api, p.a, p.a.type, p.batch, out.a); !s.ok()) return s;
  if (auto s = make_layout(api, p.b, p.b.type, p.batch, out.b); !s.ok()) return s;
  if (auto s = make_layout(api, p.d, p.d.type, p.batch, out.c); !s.ok()) return s;
  if (auto s = make_layout(api, p.d, p.d.type, p.batch, out.d); !s.ok()) return s;
  if (cublasStatus_t s = api.cublasLtMatmulPreferenceCreate(&out.pref); s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kMaxWorkspace;
  if (cublasStatus_t s = api.cublasLtMatmulPreferenceSetAttribute(
          out.pref, static_cast<int>(PrefAttr::MAX_WORKSPACE_BYTES), &ws, sizeof(ws));
      s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  for (PrefAttr a : {PrefAttr::MIN_ALIGNMENT_A_BYTES, PrefAttr::MIN_ALIGNMENT_B_BYTES, PrefAttr::MIN_ALIGNMENT_C_BYTES,
                     PrefAttr::MIN_ALIGNMENT_D_BYTES}) {
    const uint32_t align = kAlignment;
    if (cublasStatus_t s = api.cublasLtMatmulPreferenceSetAttribute(out.pref, static_cast<int>(a), &align, sizeof(align));
        s != STATUS_SUCCESS)
      return lt_error(api, s, "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }
  return {};
}

Knobs algo_knobs(const LtApi& api, const MatmulAlgo& algo) {
  Knobs k;
  for (const auto& f : kFields) {
    const int64_t v = read_field(api, algo, f);
    if (f.omit_value < 0 || v != f.omit_value) k[f.knob] = v;
  }
  return k;
}

Status check_algo_knobs(const Knobs& k) {
  if (!k.count("algo")) return {ErrorCode::INVALID_VALUE, "cublaslt: the knobs name no algorithm ('algo')"};
  for (const auto& [name, value] : k) {
    const AlgoField* f = nullptr;
    for (const auto& field : kFields)
      if (name == field.knob) f = &field;
    if (!f) {
      std::string known;
      for (const auto& field : kFields) known += (known.empty() ? "" : ", ") + std::string(field.knob);
      return {ErrorCode::INVALID_VALUE, "cublaslt: no knob '" + name + "' (its knobs: " + known + ")"};
    }
    // The algorithm id and split count are signed 32-bit attributes, the rest unsigned.
    const bool is_signed = f->attr == AlgoAttr::ID || f->attr == AlgoAttr::SPLITK_NUM;
    const int64_t lo = is_signed ? INT32_MIN : 0;
    const int64_t hi = f->size == 2 ? UINT16_MAX : is_signed ? INT32_MAX : UINT32_MAX;
    if (value < lo || value > hi)
      return {ErrorCode::INVALID_VALUE, "cublaslt: knob " + name + "=" + std::to_string(value) + " is not in " +
                                            std::to_string(lo) + ".." + std::to_string(hi)};
  }
  return {};
}

Status algo_from_knobs(const LtApi& api, LtHandle h, const LtProblem& p, const Knobs& k, MatmulAlgo& out) {
  auto it = k.find("algo");
  if (it == k.end()) return {ErrorCode::INVALID_VALUE, "cublaslt: the knobs name no algorithm ('algo')"};
  const int cdt = static_cast<int>(p.d.type);
  if (cublasStatus_t s = api.cublasLtMatmulAlgoInit(h, static_cast<int>(p.compute), static_cast<int>(p.scale),
                                                    static_cast<int>(p.a.type), static_cast<int>(p.b.type), cdt, cdt,
                                                    static_cast<int>(it->second), &out);
      s != STATUS_SUCCESS)
    return lt_error(api, s, "cublasLtMatmulAlgoInit(algo " + std::to_string(it->second) + ")");
  for (const auto& f : kFields) {
    if (f.attr == AlgoAttr::ID) continue;
    auto v = k.find(f.knob);
    const int64_t value = v != k.end() ? v->second : (f.omit_value < 0 ? 0 : f.omit_value);
    const uint32_t v32 = static_cast<uint32_t>(value);
    const uint16_t v16 = static_cast<uint16_t>(value);
    const void* buf = f.size == 2 ? static_cast<const void*>(&v16) : static_cast<const void*>(&v32);
    if (cublasStatus_t s = api.cublasLtMatmulAlgoConfigSetAttribute(&out, static_cast<int>(f.attr), buf, f.size);
        s != STATUS_SUCCESS && v != k.end())
      return lt_error(api, s, std::string("cublasLtMatmulAlgoConfigSetAttribute(") + f.knob + ")");
  }
  return {};
}

Status shared_lt_handle(const LtApi& api, HandleImpl& h, SharedLtHandle*& out) {
  out = nullptr;
  if (!h.cuda) return {ErrorCode::DEVICE_NOT_AVAILABLE, "cublaslt: not a CUDA handle"};
  if (auto s = cuda::make_current(h); !s.ok()) return s;
  // Built once per context and never freed (see src/engines/cudnn/handles.hpp for why).
  static auto* mutex = new std::mutex;
  static auto* handles = new std::map<cuda::CUcontext, std::unique_ptr<SharedLtHandle>>;
  std::lock_guard<std::mutex> lock(*mutex);
  auto& slot = (*handles)[h.cuda->context];
  if (!slot) {
    auto sh = std::make_unique<SharedLtHandle>();
    if (cublasStatus_t s = api.cublasLtCreate(&sh->handle); s != STATUS_SUCCESS) {
      handles->erase(h.cuda->context);
      return lt_error(api, s, "cublasLtCreate", ErrorCode::DEVICE_NOT_AVAILABLE);
    }
    DG_LOG(INFO) << "cublaslt: created a cuBLASLt handle for cuda:" << h.cuda->ordinal;
    slot = std::move(sh);
  }
  out = slot.get();
  return {};
}

}  // namespace dnngraph::cublaslt
