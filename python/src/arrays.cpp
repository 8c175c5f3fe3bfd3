// Arrays through DLPack (NumPy, PyTorch, CuPy, JAX, anything with __dlpack__ or the buffer
// protocol), data types from any framework's dtype, streams from any framework's stream object.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

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

struct TypeRow {
  dl::dtype_code code;
  uint8_t bits;
  DataType type;
};
// DLPack's (code, bits) of every type dnngraph takes; FP8 codes carry their width in the code.
constexpr TypeRow kTypes[] = {
    {dl::dtype_code::Float, 16, DataType::HALF},       {dl::dtype_code::Float, 32, DataType::FLOAT},
    {dl::dtype_code::Float, 64, DataType::DOUBLE},     {dl::dtype_code::Bfloat, 16, DataType::BFLOAT16},
    {dl::dtype_code::Int, 8, DataType::INT8},          {dl::dtype_code::Int, 32, DataType::INT32},
    {dl::dtype_code::Int, 64, DataType::INT64},        {dl::dtype_code::UInt, 8, DataType::UINT8},
    {dl::dtype_code::Bool, 8, DataType::BOOLEAN},      {dl::dtype_code::Float8_E4M3FN, 8, DataType::FP8_E4M3},
    {dl::dtype_code::Float8_E5M2, 8, DataType::FP8_E5M2},
};

}  // namespace

bool ArrayInfo::on_host() const {
  return device_type == kCpu || device_type == kCudaHost || device_type == kCudaManaged;
}

bool ArrayInfo::usable_on(const Device& d) const {
  if (d.is_cpu()) return on_host();
  if (device_type == kCuda) return device_id == d.index();
  return device_type == kCudaHost || device_type == kCudaManaged;
}

std::string ArrayInfo::device_string() const {
  switch (device_type) {
    case kCpu: return "cpu";
    case kCuda: return "cuda:" + std::to_string(device_id);
    case kCudaHost: return "cuda_host (pinned)";
    case kCudaManaged: return "cuda_managed";
    default: return "DLPack device type " + std::to_string(device_type);
  }
}

std::optional<DataType> ArrayInfo::data_type() const {
  if (view_of) return view_of;
  if (dtype.lanes != 1) return std::nullopt;
  for (const TypeRow& r : kTypes)
    if (static_cast<uint8_t>(r.code) == dtype.code && r.bits == dtype.bits) return r.type;
  return std::nullopt;
}

std::string ArrayInfo::dtype_string() const {
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
  return "DLPack dtype (code " + std::to_string(dtype.code) + ", " + std::to_string(dtype.bits) + " bits)";
}

std::vector<int64_t> ArrayInfo::dims() const { return std::vector<int64_t>(shape, shape + ndim); }

std::vector<int64_t> ArrayInfo::strides() const { return std::vector<int64_t>(stride, stride + ndim); }

int64_t ArrayInfo::extent_bytes() const {
  for (int i = 0; i < ndim; ++i)
    if (shape[i] == 0) return 0;
  // A DLPack producer may claim any strides (NumPy's as_strided does): a span past int64 is
  // refused. checked::span_bytes's arithmetic, on the fixed arrays (execute allocates nothing).
  int64_t last = 0, count = 0, bytes = 0;
  bool ok = true;
  for (int i = 0; i < ndim && ok; ++i) ok = checked::mul_add(shape[i] - 1, stride[i], last, last);
  if (!ok || !checked::add(last, 1, count) || !checked::mul(count, (dtype.bits * dtype.lanes + 7) / 8, bytes))
    fail(ErrorCode::INVALID_VALUE, "the array's dims " + dims_to_string(dims()) + " and strides " +
                                       dims_to_string(strides()) + " reach past 2^63 bytes");
  return bytes;
}

bool ArrayInfo::has_negative_stride() const {
  for (int i = 0; i < ndim; ++i)
    if (stride[i] < 0 && shape[i] > 1) return true;
  return false;
}

namespace {

// The ArrayInfo of an imported array.
void describe_import(ArrayRef& out) {
  const nb::ndarray<>& a = out.array;
  if (a.ndim() > static_cast<size_t>(checked::kMaxRank))
    fail(ErrorCode::INVALID_VALUE, "the array has " + std::to_string(a.ndim()) + " dims; tensors have at most " +
                                       std::to_string(checked::kMaxRank));
  out.ptr = a.data();
  out.ndim = static_cast<int>(a.ndim());
  for (int i = 0; i < out.ndim; ++i) {
    out.shape[i] = static_cast<int64_t>(a.shape(i));
    out.stride[i] = a.stride(i);
  }
  out.dtype = a.dtype();
  out.device_type = a.device_type();
  out.device_id = a.device_id();
  out.maybe_pinned = false;
}

bool cast_array(nb::handle obj, ArrayRef& out) {
  // Writable first: outputs need it. A read-only producer (a frozen NumPy array, JAX) then
  // comes in read-only, and only inputs may be read-only.
  nb::ndarray<> rw;
  if (nb::try_cast(obj, rw, false)) {
    out.array = std::move(rw);
    out.writable = true;
    describe_import(out);
    return true;
  }
  nb::ndarray<nb::ro> ro;
  if (nb::try_cast(obj, ro, false)) {
    out.array = nb::ndarray<>(ro);
    out.writable = false;
    describe_import(out);
    return true;
  }
  return false;
}

// The attribute names probe_array and ml_dtypes_array read, interned once (a registry built once, never freed).
struct Names {
  PyObject *data_ptr, *shape, *stride, *dtype, *is_cpu, *is_cuda, *get_device, *is_neg, *torch, *type, *ml_dtypes;
};

const Names& names() {
  static const Names n = [] {
    auto intern = [](const char* s) {
      PyObject* o = PyUnicode_InternFromString(s);
      if (!o) throw nb::python_error();
      return o;
    };
    return Names{intern("data_ptr"), intern("shape"),      intern("stride"), intern("dtype"),
                 intern("is_cpu"),   intern("is_cuda"),    intern("get_device"), intern("is_neg"),
                 intern("torch"),    intern("type"),       intern("ml_dtypes")};
  }();
  return n;
}

// The module of that name where it has been imported already (none is imported here); else an
// invalid object.
nb::object imported_module(PyObject* name) {
  PyObject* mod = PyImport_GetModule(name);  // new reference; null when not imported
  if (!mod) PyErr_Clear();
  return nb::steal(mod);
}

// torch.Tensor and torch's dtypes by identity (singletons of the torch module), with the DLPack
// type torch's __dlpack__ gives each dtype (fp8, which it refuses, by DLPack's fp8 codes). Built
// once, on the first tensor seen after `import torch`; null before that.
struct TorchTypes {
  struct Row {
    PyObject* dtype;
    dl::dtype dl;
  };
  PyTypeObject* tensor = nullptr;
  std::vector<Row> rows;
};

const TorchTypes* torch_types() {
  static std::unique_ptr<const TorchTypes> types;
  if (types) return types.get();
  const nb::object mod = imported_module(names().torch);
  if (!mod.is_valid()) return nullptr;
  struct Named {
    const char* name;
    dl::dtype_code code;
    uint8_t bits;
  };
  using C = dl::dtype_code;
  static constexpr Named kNamed[] = {
      {"float32", C::Float, 32}, {"float16", C::Float, 16},   {"bfloat16", C::Bfloat, 16},
      {"float64", C::Float, 64}, {"int8", C::Int, 8},         {"uint8", C::UInt, 8},
      {"int16", C::Int, 16},     {"uint16", C::UInt, 16},     {"int32", C::Int, 32},
      {"uint32", C::UInt, 32},   {"int64", C::Int, 64},       {"uint64", C::UInt, 64},
      {"bool", C::Bool, 8},      {"float8_e4m3fn", C::Float8_E4M3FN, 8}, {"float8_e5m2", C::Float8_E5M2, 8},
  };
  auto out = std::make_unique<TorchTypes>();
  nb::object tensor = mod.attr("Tensor");
  if (!PyType_Check(tensor.ptr())) return nullptr;
  out->tensor = reinterpret_cast<PyTypeObject*>(tensor.release().ptr());  // kept: torch's lifetime
  for (const Named& n : kNamed)
    if (nb::hasattr(mod, n.name))
      out->rows.push_back({nb::object(mod.attr(n.name)).release().ptr(), {static_cast<uint8_t>(n.code), n.bits, 1}});
  types = std::move(out);
  return types.get();
}

// obj.name, or obj.name(); an invalid object (the error cleared) when that raises.
nb::object get(PyObject* obj, PyObject* name) {
  PyObject* r = PyObject_GetAttr(obj, name);
  if (!r) PyErr_Clear();
  return nb::steal(r);
}
nb::object call(PyObject* obj, PyObject* name) {
  PyObject* r = PyObject_VectorcallMethod(name, &obj, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!r) PyErr_Clear();
  return nb::steal(r);
}

// A tuple of ints (torch.Size is one) into out; false past kMaxRank or on a non-int.
bool read_ints(const nb::object& tuple, int64_t* out, int& n) {
  if (!tuple.is_valid() || !PyTuple_Check(tuple.ptr()) || PyTuple_GET_SIZE(tuple.ptr()) > checked::kMaxRank)
    return false;
  n = static_cast<int>(PyTuple_GET_SIZE(tuple.ptr()));
  for (int i = 0; i < n; ++i) {
    out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple.ptr(), i));
    if (out[i] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

// The device, as torch's DLPack export names it; false for a kind left to DLPack (meta, mps, ...).
// CUDA first: that is where the call cost matters (two reads there, two on the CPU).
bool torch_device(PyObject* obj, ArrayInfo& out) {
  const Names& n = names();
  if (get(obj, n.is_cuda).ptr() == Py_True) {
    nb::object index = call(obj, n.get_device);
    if (!index.is_valid() || !PyLong_Check(index.ptr())) return false;
    const long id = PyLong_AsLong(index.ptr());
    if (id == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out.device_type = kCuda;
    out.device_id = static_cast<int>(id);
    out.maybe_pinned = false;
    return true;
  }
  if (get(obj, n.is_cpu).ptr() != Py_True) return false;
  out.device_type = kCpu;
  out.device_id = 0;
  out.maybe_pinned = true;
  return true;
}

// What torch's DLPack export would give, read from the tensor's own attributes (~0.5 us, against
// ~3 us for __dlpack__ and __dlpack_device__, which are Python code). Not read: requires_grad
// (to_array takes such a tensor too: __dlpack__ refuses it, but nanobind then falls back to
// torch.utils.dlpack.to_dlpack, which does not), and the layout: the other layouts' tensors have
// no data_ptr() (sparse, mkldnn) or no shape or strides (nested, CSR), and a read that raises
// sends the tensor to to_array, which refuses it.
Probe probe_torch(PyObject* obj, const TorchTypes& types, ArrayInfo& out) {
  const Names& n = names();
  nb::object dtype = get(obj, n.dtype);
  const TorchTypes::Row* row = nullptr;
  for (const auto& r : types.rows)
    if (r.dtype == dtype.ptr()) row = &r;
  if (!row || !torch_device(obj, out)) return Probe::NONE;
  nb::object negated = call(obj, n.is_neg);
  if (!negated.is_valid()) return Probe::NONE;
  if (negated.ptr() == Py_True) return Probe::NEGATED;
  nb::object ptr = call(obj, n.data_ptr);
  int stride_dims = -1;
  if (!ptr.is_valid() || !read_ints(get(obj, n.shape), out.shape, out.ndim) ||
      !read_ints(call(obj, n.stride), out.stride, stride_dims) || stride_dims != out.ndim)
    return Probe::NONE;
  out.ptr = PyLong_AsVoidPtr(ptr.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return Probe::NONE;
  }
  out.dtype = row->dl;
  out.writable = true;  // torch's DLPack marks no tensor read-only
  out.view_of.reset();
  return Probe::ARRAY;
}

// NumPy's array and dtype objects as its public C API lays them out (ndarraytypes.h; macros
// such as PyArray_DATA and PyArray_DESCR read these fields, so the layout is NumPy's ABI in 1.x and
// 2.x alike; of the dtype, only the leading fields up to type_num kept their places in 2.x). Read
// directly, not through the buffer protocol, which reports the strides of a contiguous array's
// size-1 dims normalized where DLPack (and so every message) gives the array's own.
struct NumpyArrayFields {
  PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};
struct NumpyDescrFields {
  PyObject_HEAD
  PyTypeObject* typeobj;
  char kind, type, byteorder, flags;
  int type_num;
};
constexpr int kNumpyWriteable = 0x0400;  // NPY_ARRAY_WRITEABLE

// The DLPack type NumPy's __dlpack__ gives a builtin type number (NPY_BOOL = 0 ... NPY_HALF = 23);
// false for the others (long double, complex, strings, object, datetime, user types such as
// ml_dtypes'): to_array judges those.
bool numpy_dtype(int type_num, dl::dtype& out) {
  using C = dl::dtype_code;
  struct Row {
    C code;
    int bytes;
  };
  static constexpr Row kTypes[] = {
      {C::Bool, 1}, {C::Int, 1},  {C::UInt, 1},  {C::Int, 2},  {C::UInt, 2},   {C::Int, 4},
      {C::UInt, 4}, {C::Int, sizeof(long)}, {C::UInt, sizeof(long)}, {C::Int, 8}, {C::UInt, 8},
      {C::Float, 4}, {C::Float, 8},
  };
  constexpr int kHalf = 23;
  if (type_num == kHalf) {
    out = {static_cast<uint8_t>(C::Float), 16, 1};
    return true;
  }
  if (type_num < 0 || type_num >= static_cast<int>(std::size(kTypes))) return false;
  out = {static_cast<uint8_t>(kTypes[type_num].code), static_cast<uint8_t>(kTypes[type_num].bytes * 8), 1};
  return true;
}

// What NumPy's __dlpack__ would export, from the array's fields (no Python code runs).
Probe probe_numpy(PyObject* obj, ArrayInfo& out) {
  const auto* a = reinterpret_cast<const NumpyArrayFields*>(obj);
  const auto* d = reinterpret_cast<const NumpyDescrFields*>(a->descr);
  // NumPy's __dlpack__ refuses a byte order other than the machine's.
  const bool native = d->byteorder == '=' || d->byteorder == '|' ||
                      d->byteorder == (std::endian::native == std::endian::little ? '<' : '>');
  if (!native || !numpy_dtype(d->type_num, out.dtype) || a->nd > checked::kMaxRank) return Probe::NONE;
  const int64_t itemsize = out.dtype.bits / 8;
  out.ndim = a->nd;
  for (int i = 0; i < a->nd; ++i) {
    if (a->strides[i] % itemsize != 0) return Probe::NONE;  // DLPack strides are in elements
    out.shape[i] = a->dimensions[i];
    out.stride[i] = a->strides[i] / itemsize;
  }
  out.ptr = a->data;
  out.writable = (a->flags & kNumpyWriteable) != 0;
  out.device_type = kCpu;
  out.device_id = 0;
  out.maybe_pinned = false;
  out.view_of.reset();
  return Probe::ARRAY;
}

// ml_dtypes' scalar types (bfloat16, float8_e4m3fn, float8_e5m2) by identity, with the tensor type
// of each: read once, on the first array seen after `import ml_dtypes`; null before that.
struct MlDtypes {
  struct Row {
    PyObject* type;
    DataType data_type;
  };
  std::vector<Row> rows;
};

const MlDtypes* ml_dtypes_types() {
  static std::unique_ptr<const MlDtypes> types;
  if (types) return types.get();
  const nb::object m = imported_module(names().ml_dtypes);
  if (!m.is_valid()) return nullptr;
  auto out = std::make_unique<MlDtypes>();
  for (const auto& [attr, type] : {std::pair{"bfloat16", DataType::BFLOAT16}, std::pair{"float8_e4m3fn", DataType::FP8_E4M3},
                                   std::pair{"float8_e5m2", DataType::FP8_E5M2}})
    if (nb::hasattr(m, attr)) out->rows.push_back({nb::object(m.attr(attr)).release().ptr(), type});  // kept: the module's lifetime
  types = std::move(out);
  return types.get();
}

// ml_dtypes' NumPy arrays offer neither DLPack nor a buffer format: they come in as a same-width
// unsigned view, typed by their dtype's scalar type. Judged before DLPack is tried: the two failed
// imports cost ~5 us an array (a bf16 conv's execute through Python: 0.185 against 0.150 ms).
bool ml_dtypes_array(nb::handle obj, ArrayRef& out) {
  const MlDtypes* ml = ml_dtypes_types();
  if (!ml) return false;
  const nb::object dtype = get(obj.ptr(), names().dtype);
  const nb::object scalar = dtype.is_valid() ? get(dtype.ptr(), names().type) : nb::object();
  if (!scalar.is_valid()) return false;
  for (const auto& row : ml->rows) {
    if (row.type != scalar.ptr()) continue;
    // A NumPy view; other arrays of these types (JAX's) may have no such view, and take DLPack.
    nb::object view;
    try {
      view = obj.attr("view")(row.data_type == DataType::BFLOAT16 ? "uint16" : "uint8");
    } catch (const nb::python_error&) {
      return false;
    }
    if (!cast_array(view, out)) return false;
    out.view_of = row.data_type;
    return true;
  }
  return false;
}

}  // namespace

bool to_array(nb::handle obj, ArrayRef& out) {
  if (obj.is_none() || PyLong_Check(obj.ptr())) return false;
  out.view_of.reset();
  return ml_dtypes_array(obj, out) || cast_array(obj, out);
}

Probe probe_array(nb::handle obj, ArrayInfo& out) {
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  // Exact types only: a subclass may redefine what these reads return, and goes through DLPack.
  if (std::strcmp(tp->tp_name, "Tensor") == 0) {
    const TorchTypes* torch = torch_types();
    return torch && torch->tensor == tp ? probe_torch(obj.ptr(), *torch, out) : Probe::NONE;
  }
  if (!PyType_HasFeature(tp, Py_TPFLAGS_HEAPTYPE) && std::strcmp(tp->tp_name, "numpy.ndarray") == 0)
    return probe_numpy(obj.ptr(), out);
  return Probe::NONE;
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
