// An owned cuDNN backend descriptor. Setters chain and keep the first failure (with cuDNN's own
// words for it), which finalize() then returns, so building a descriptor reads as one statement.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "engines/cudnn/cudnn_api.hpp"

namespace dnngraph::cudnn {

// "CUDNN_BACKEND_TENSOR_DESCRIPTOR", ... for messages.
std::string desc_name(Desc d);
std::string attr_name(Attr a);  // "CUDNN_ATTR_TENSOR_STRIDES", ...

// A failed cuDNN call as a Status: "cuDNN: <what>: CUDNN_STATUS_X (cuDNN's last error message)".
Status cudnn_error(const CudnnApi& api, cudnnStatus_t s, const std::string& what,
                   ErrorCode code = ErrorCode::GRAPH_NOT_SUPPORTED);

class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const CudnnApi& api, Desc type);  // creates it; a failure shows in finalize()/status()
  ~Descriptor();
  Descriptor(Descriptor&& o) noexcept;
  Descriptor& operator=(Descriptor&& o) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  Descriptor& set(Attr a, AttrType t, int64_t count, const void* data);
  Descriptor& set_i64(Attr a, int64_t v) { return set(a, AttrType::INT64, 1, &v); }
  Descriptor& set_i64s(Attr a, const std::vector<int64_t>& v) {
    return set(a, AttrType::INT64, static_cast<int64_t>(v.size()), v.data());
  }
  Descriptor& set_bool(Attr a, bool v) { return set(a, AttrType::BOOLEAN, 1, &v); }
  Descriptor& set_double(Attr a, double v) { return set(a, AttrType::DOUBLE, 1, &v); }
  Descriptor& set_float(Attr a, float v) { return set(a, AttrType::FLOAT, 1, &v); }
  Descriptor& set_dtype(Attr a, Dtype v) { return set_enum(a, AttrType::DATA_TYPE, static_cast<int>(v)); }
  Descriptor& set_enum(Attr a, AttrType t, int v) { return set(a, t, 1, &v); }
  Descriptor& set_desc(Attr a, BackendDescriptor d) { return set(a, AttrType::BACKEND_DESCRIPTOR, 1, &d); }
  Descriptor& set_descs(Attr a, const std::vector<BackendDescriptor>& v) {
    return set(a, AttrType::BACKEND_DESCRIPTOR, static_cast<int64_t>(v.size()), v.data());
  }
  Descriptor& set_handle(Attr a, cudnnHandle_t h) { return set(a, AttrType::HANDLE, 1, &h); }
  Status finalize();

  // Reads one INT64 attribute of a finalized descriptor.
  Status get_i64(Attr a, int64_t& out) const;

  BackendDescriptor get() const { return d_; }
  Desc type() const { return type_; }
  const Status& status() const { return status_; }
  const CudnnApi* api() const { return api_; }

 private:
  void reset();
  const CudnnApi* api_ = nullptr;
  BackendDescriptor d_ = nullptr;
  Desc type_ = Desc::TENSOR;
  Status status_;
};

// Descriptors that a larger one refers to, kept alive as long as it (cuDNN may keep pointers).
using DescriptorList = std::vector<std::shared_ptr<Descriptor>>;

}  // namespace dnngraph::cudnn
