#include "engines/cudnn/descriptor.hpp"

namespace dnngraph::cudnn {

std::string desc_name(Desc d) {
  switch (d) {
#define DG_CUDNN_DESC_CASE(name, value) \
  case Desc::name: return "CUDNN_BACKEND_" #name "_DESCRIPTOR";
    DG_CUDNN_DESCS(DG_CUDNN_DESC_CASE)
#undef DG_CUDNN_DESC_CASE
  }
  return "cuDNN descriptor type " + std::to_string(static_cast<int>(d));
}

std::string attr_name(Attr a) {
  switch (a) {
#define DG_CUDNN_ATTR_CASE(name, value) \
  case Attr::name: return "CUDNN_ATTR_" #name;
    DG_CUDNN_ATTRS(DG_CUDNN_ATTR_CASE)
#undef DG_CUDNN_ATTR_CASE
  }
  return "cuDNN attribute " + std::to_string(static_cast<int>(a));
}

Status cudnn_error(const CudnnApi& api, cudnnStatus_t s, const std::string& what, ErrorCode code) {
  return {code, "cuDNN: " + what + ": " + status_text(api, s)};
}

Descriptor::Descriptor(const CudnnApi& api, Desc type) : api_(&api), type_(type) {
  if (cudnnStatus_t s = api.cudnnBackendCreateDescriptor(static_cast<int>(type), &d_); s != STATUS_SUCCESS) {
    d_ = nullptr;
    status_ = cudnn_error(api, s, "cudnnBackendCreateDescriptor(" + desc_name(type) + ")");
  }
}

Descriptor::~Descriptor() { reset(); }

void Descriptor::reset() {
  if (api_ && d_) api_->cudnnBackendDestroyDescriptor(d_);
  d_ = nullptr;
}

Descriptor::Descriptor(Descriptor&& o) noexcept : api_(o.api_), d_(o.d_), type_(o.type_), status_(o.status_) {
  o.d_ = nullptr;
}

Descriptor& Descriptor::operator=(Descriptor&& o) noexcept {
  if (this != &o) {
    reset();
    api_ = o.api_;
    d_ = o.d_;
    type_ = o.type_;
    status_ = o.status_;
    o.d_ = nullptr;
  }
  return *this;
}

Descriptor& Descriptor::set(Attr a, AttrType t, int64_t count, const void* data) {
  if (!status_.ok() || !d_) return *this;
  if (cudnnStatus_t s = api_->cudnnBackendSetAttribute(d_, static_cast<int>(a), static_cast<int>(t), count, data);
      s != STATUS_SUCCESS)
    status_ = cudnn_error(*api_, s, "cudnnBackendSetAttribute(" + desc_name(type_) + ", " + attr_name(a) + ")");
  return *this;
}

Status Descriptor::finalize() {
  if (!status_.ok()) return status_;
  if (!d_) return {ErrorCode::INTERNAL_ERROR, "cuDNN: finalize of a descriptor that was never created"};
  if (cudnnStatus_t s = api_->cudnnBackendFinalize(d_); s != STATUS_SUCCESS)
    status_ = cudnn_error(*api_, s, "cudnnBackendFinalize(" + desc_name(type_) + ")");
  return status_;
}

Status Descriptor::get_i64(Attr a, int64_t& out) const {
  int64_t n = 0;
  if (cudnnStatus_t s = api_->cudnnBackendGetAttribute(d_, static_cast<int>(a), static_cast<int>(AttrType::INT64), 1,
                                                       &n, &out);
      s != STATUS_SUCCESS)
    return cudnn_error(*api_, s, "cudnnBackendGetAttribute(" + desc_name(type_) + ", " + attr_name(a) + ")");
  return {};
}

}  // namespace dnngraph::cudnn
