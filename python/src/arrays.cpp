// Arrays through DLPack (NumPy, PyTorch, CuPy, JAX, anything with __dlpack__ or the buffer
// protocol), data types from any framework's dtype, streams from any framework's stream object.
#include <algorithm>
#include <cctype>

#include "common.hpp"
#include "core/checked.hpp"

namespace dnngraph::python {
namespace {

namespace dl = nb::dlpack;

constexpr int kCpu = 1, kCuda = 2, kCudaHost = 3, kCudaManaged = 13;

std::optional<DataType> data_type_by_name(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  if (s.rfind("jnp.", 0) == 0) s = s.substr(4);
  struct Name { const char* name; DataType type; };
  static const Name kNames[] = {
      {"float32", DataType::FLOAT},      {"float", DataType::FLOAT},        {"float16", DataType::HALF},
      {"half", DataType::HALF},          {"bfloat16", DataType::BFLOAT16},  {"float64", DataType::DOUBLE},
      {"double", DataType::DOUBLE},      {"int8", DataType::INT8},          {"uint8", DataType::UINT8},
      {"int32", DataType::INT32},        {"int64", DataType::INT64},        {"long", DataType::INT64},
      {"bool", DataType::BOOLEAN},       {"boolean", DataType::BOOLEAN},    {"bool_", DataType::BOOLEAN},
      {"float8_e4m3fn", DataType::FP8_E4M3}, {"float8_e4m3", DataType::FP8_E4M3}, {"fp8_e4m3", DataType::FP8_E4M3},
      {"float8_e5m2", DataType::FP8_E5M2},   {"fp8_e5m2", DataType::FP8_E5M2},
  };
  for (const auto& n : kNames)
    if (s == n.name) return n.type;
  return std::nullopt;
}

}  // namespace

bool ArrayRef::on_host() const {
  const int t = array.device_type();
  return t == kCpu || t == kCudaHost || t == kCudaManaged;
}

bool ArrayRef::usable_on(const Device& d) const {
  const int t = array.device_type();
  if (d.is_cpu()) return on_host();
  if (t == kCuda) return array.device_id() == d.index();
  return t == kCudaHost || t == kCudaManaged;
}

std::string ArrayRef::device_string() const {
  switch (array.device_type()) {
    case kCpu: return "cpu";
    case kCuda: return "cuda:" + std::to_string(array.device_id());
    case kCudaHost: return "cuda_host (pinned)";
    case kCudaManaged: return "cuda_managed";
    default: return "DLPack device type " + std::to_string(array.device_type());
  }
}

std::optional<DataType> ArrayRef::data_type() const {
  if (view_of) return view_of;
  struct Row {
    dl::dtype_code code;
    uint8_t bits;
    DataType type;
  };
  // DLPack's (code, bits) of every type dnngraph takes; FP8 codes carry their width in the code.
  static constexpr Row kTypes[] = {
      {dl::dtype_code::Float, 16, DataType::HALF},       {dl::dtype_code::Float, 32, DataType::FLOAT},
      {dl::dtype_code::Float, 64, DataType::DOUBLE},     {dl::dtype_code::Bfloat, 16, DataType::BFLOAT16},
      {dl::dtype_code::Int, 8, DataType::INT8},          {dl::dtype_code::Int, 32, DataType::INT32},
      {dl::dtype_code::Int, 64, DataType::INT64},        {dl::dtype_code::UInt, 8, DataType::UINT8},
      {dl::dtype_code::Bool, 8, DataType::BOOLEAN},      {dl::dtype_code::Float8_E4M3FN, 8, DataType::FP8_E4M3},
      {dl::dtype_code::Float8_E5M2, 8, DataType::FP8_E5M2},
  };
  const dl::dtype t = array.dtype();
  if (t.lanes != 1) return std::nullopt;
  for (const Row& r : kTypes)
    if (static_cast<uint8_t>(r.code) == t.code && r.bits == t.bits) return r.type;
  return std::nullopt;
}

std::string ArrayRef::dtype_string() const {
  if (auto t = data_type()) {
    switch (*t) {
      case DataType::FLOAT: return "float32";
      case DataType::HALF: return "float16";
      case DataType::BFLOAT16: return "bfloat16";
      case DataType::DOUBLE: return "float64";
      case DataType::INT8: return "int8";
      case DataType::UINT8: return "uint8";
      case DataType::INT32: return "int32";
      case DataType::INT64: return "int64";
      case DataType::BOOLEAN: return "bool";
      case DataType::FP8_E4M3: return "float8_e4m3fn";
      case DataType::FP8_E5M2: return "float8_e5m2";
      default: break;
    }
  }
  const dl::dtype t = array.dtype();
  return "DLPack dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits)";
}

std::vector<int64_t> ArrayRef::dims() const {
  std::vector<int64_t> d(array.ndim());
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int64_t>(array.shape(i));
  return d;
}

std::vector<int64_t> ArrayRef::strides() const {
  std::vector<int64_t> s(array.ndim());
  for (size_t i = 0; i < s.size(); ++i) s[i] = array.stride(i);
  return s;
}

int64_t ArrayRef::extent_bytes() const {
  const std::vector<int64_t> d = dims();
  for (int64_t n : d)
    if (n == 0) return 0;
  int64_t bytes = 0;
  // A DLPack producer may claim any strides (NumPy's as_strided does): a span past int64 is refused.
  if (!checked::span_bytes(d, strides(), static_cast<int64_t>(array.itemsize()), bytes))
    fail(ErrorCode::INVALID_VALUE, "the array's dims " + dims_to_string(d) + " and strides " +
                                       dims_to_string(strides()) + " reach past 2^63 bytes");
  return bytes;
}

bool ArrayRef::has_negative_stride() const {
  for (size_t i = 0; i < array.ndim(); ++i)
    if (array.stride(i) < 0 && array.shape(i) > 1) return true;
  return false;
}

namespace {

bool cast_array(nb::handle obj, ArrayRef& out) {
  // Writable first: outputs need it. A read-only producer (a frozen NumPy array, JAX) then
  // comes in read-only, and only inputs may be read-only.
  nb::ndarray<> rw;
  if (nb::try_cast(obj, rw, false)) {
    out.array = std::move(rw);
    out.writable = true;
    return true;
  }
  nb::ndarray<nb::ro> ro;
  if (nb::try_cast(obj, ro, false)) {
    out.array = nb::ndarray<>(ro);
    out.writable = false;
    return true;
  }
  return false;
}

// ml_dtypes' NumPy arrays (bfloat16, float8_e4m3fn, float8_e5m2) offer neither DLPack nor a
// buffer format: they come in as a same-width unsigned view, typed by their dtype's name.
bool ml_dtypes_array(nb::handle obj, ArrayRef& out) {
  if (!nb::hasattr(obj, "dtype") || !nb::hasattr(obj, "view")) return false;
  nb::object dtype = obj.attr("dtype");
  if (!nb::hasattr(dtype, "name") || !nb::isinstance<nb::str>(dtype.attr("name"))) return false;
  const auto type = data_type_by_name(nb::cast<std::string>(dtype.attr("name")));
  if (type != DataType::BFLOAT16 && type != DataType::FP8_E4M3 && type != DataType::FP8_E5M2) return false;
  nb::object view = obj.attr("view")(type == DataType::BFLOAT16 ? "uint16" : "uint8");
  if (!cast_array(view, out)) return false;
  out.view_of = type;
  return true;
}

}  // namespace

bool to_array(nb::handle obj, ArrayRef& out) {
  if (obj.is_none() || PyLong_Check(obj.ptr())) return false;
  out.view_of.reset();
  return cast_array(obj, out) || ml_dtypes_array(obj, out);
}

DataType to_data_type(nb::handle obj) {
  if (nb::isinstance<DataType>(obj)) return nb::cast<DataType>(obj);
  std::string name;
  if (nb::isinstance<nb::str>(obj)) {
    name = nb::cast<std::string>(obj);
    if (auto ours = data_type_from_string(name)) return *ours;
  } else if (PyType_Check(obj.ptr()) && nb::hasattr(obj, "__name__")) {
    name = nb::cast<std::string>(obj.attr("__name__"));  // numpy.float32, ml_dtypes.bfloat16
  } else if (nb::hasattr(obj, "name") && nb::isinstance<nb::str>(obj.attr("name"))) {
    name = nb::cast<std::string>(obj.attr("name"));  // numpy.dtype('float16')
  } else {
    name = nb::cast<std::string>(nb::str(obj));  // torch.float16
  }
  if (auto t2 = data_type_by_name(name)) return *t2;
  fail(ErrorCode::INVALID_DATA_TYPE, "'" + name + "' is not a data type dnngraph knows");
}

void* to_pointer(nb::handle obj) {
  if (obj.is_none()) return nullptr;
  void* p = PyLong_AsVoidPtr(obj.ptr());
  if (PyErr_Occurred()) throw nb::python_error();
  return p;
}

void* to_stream(nb::handle obj) {
  if (obj.is_none()) return nullptr;
  if (PyLong_Check(obj.ptr())) return to_pointer(obj);
  if (nb::hasattr(obj, "cuda_stream")) return to_pointer(obj.attr("cuda_stream"));  // torch.cuda.Stream
  if (nb::hasattr(obj, "ptr")) return to_pointer(obj.attr("ptr"));                  // cupy.cuda.Stream
  if (nb::hasattr(obj, "_as_parameter_")) {                                         // ctypes-style
    nb::object p = obj.attr("_as_parameter_");
    if (nb::hasattr(p, "value")) p = p.attr("value");
    return to_pointer(p);
  }
  fail(ErrorCode::INVALID_VALUE, "set_stream: expected an int (cudaStream_t), None, or an object with "
                                 ".cuda_stream, .ptr or ._as_parameter_; got " +
                                     py_type_name(obj));
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    if (!checked::mul(s[i], std::max<int64_t>(dims[i], 1), s[i - 1]))
      fail(ErrorCode::INVALID_VALUE, "dims " + dims_to_string(dims) + " have no row-major strides within int64");
  return s;
}


}  // namespace dnngraph::python
