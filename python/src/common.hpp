// Shared by the binding files: Status -> Python exceptions, arrays through DLPack, conversions.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
// Every file gets the same casters: a cast compiled without one fails at run time (std::bad_cast).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "core/checked.hpp"
#include "graph/infer_util.hpp"

namespace dnngraph::python {

namespace nb = nanobind;

// ---- errors (errors.cpp)

// Carries a failed Status to the exception translator, which raises ValueError,
// dnngraph.GraphNotSupportedError or RuntimeError with the library's message and `.code`.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status s) : status_(std::move(s)), what_(status_.to_string()) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  Status status_;
  std::string what_;
};

inline void check(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}
[[noreturn]] inline void fail(ErrorCode code, std::string message) { throw StatusError(Status(code, std::move(message))); }

void init_errors(nb::module_& m);

// "numpy.ndarray", "torch.Tensor", ...: for messages.
inline std::string py_type_name(nb::handle obj) { return nb::type_name(obj.type()).c_str(); }

// ---- arrays (arrays.cpp)

// What the pack checks read of an array: its pointer, dims, strides (in elements), DLPack type
// and device, and writability. Fixed-size, so that execute() allocates nothing per array.
struct ArrayInfo {
  void* ptr = nullptr;
  int ndim = 0;
  int64_t shape[checked::kMaxRank] = {}, stride[checked::kMaxRank] = {};
  nb::dlpack::dtype dtype{};
  int device_type = 0, device_id = 0;
  bool writable = false;
  // A torch CPU tensor read by probe_array: DLPack might call it pinned (kDLCUDAHost), which only
  // a GPU handle tells apart, so there to_array decides.
  bool maybe_pinned = false;
  // The type of an ml_dtypes array (bfloat16, float8_*), which comes in as an unsigned view.
  std::optional<DataType> view_of;

  void* data() const { return ptr; }
  bool on_host() const;                      // CPU, CUDA-pinned or managed memory
  bool usable_on(const Device& d) const;     // kernels on d may read it
  std::string device_string() const;         // "cpu", "cuda:1", ...
  std::optional<DataType> data_type() const; // nullopt: a type dnngraph has no name for
  std::string dtype_string() const;          // "float32", "bfloat16", ...
  std::vector<int64_t> dims() const;
  std::vector<int64_t> strides() const;      // in elements
  // Bytes from data() to one past the last element; a span past int64 is an INVALID_VALUE error.
  int64_t extent_bytes() const;
  bool has_negative_stride() const;
};

// An array taken through DLPack (or the buffer protocol), with its ArrayInfo; holds a reference
// to its producer (`array`, or `owner` for an array read by probe_array).
struct ArrayRef : ArrayInfo {
  nb::ndarray<> array;
  nb::object owner;
};

// False when obj is neither a DLPack producer nor a buffer. An array of more than kMaxRank dims
// (no tensor has them) is an INVALID_VALUE error.
bool to_array(nb::handle obj, ArrayRef& out);
// The cheap reads of the common producers, in place of a DLPack import (a torch.Tensor's
// __dlpack__ is Python code: ~3 us per array): an exact torch.Tensor through its attributes, an
// exact numpy.ndarray through the buffer protocol. They give the ArrayInfo that to_array would.
enum class Probe {
  NONE,      // not one of them, or one that only to_array judges (another dtype, a sparse
             // layout, another device kind): `out` is unset
  ARRAY,     // `out` holds the array
  NEGATED,   // a torch tensor with its negative bit set: a lazy negation, which DLPack drops
};
Probe probe_array(nb::handle obj, ArrayInfo& out);

// A data type from a dnngraph.data_type, a NumPy / PyTorch dtype, or a name such as "float16".
DataType to_data_type(nb::handle obj);
inline DataType optional_data_type(nb::handle obj) {
  return obj.is_none() ? DataType::NOT_SET : to_data_type(obj);
}
// A stream from None, an int, or an object with .cuda_stream (torch), .ptr (cupy) or ._as_parameter_.
void* to_stream(nb::handle obj);
// A raw pointer passed as a Python int.
void* to_pointer(nb::handle obj);
// Row-major strides for dims; dims whose strides overflow int64 are an INVALID_VALUE error.
std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims);

// ---- the other binding files
void init_enums(nb::module_& m);
void init_handle(nb::module_& m);
void init_tensor(nb::module_& m);
void init_pygraph(nb::module_& m);
void init_engines(nb::module_& m);  // engines.cpp: knob_type, knob, notes, backend_version, destroy_handle

}  // namespace dnngraph::python
