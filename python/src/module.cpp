// The dnngraph._dnngraph extension: enums, handles, kernel caches, and the module's entry point.
// The graph (pygraph) and its tensors live in pygraph_*.cpp and tensor.cpp.

#include <algorithm>
#include <charconv>
#include <limits>
#include <string_view>

#include "common.hpp"

namespace dnngraph::python {
namespace {

// Binds an enum whose values run 0..last with names from dnngraph::to_string.
template <class E>
void bind_enum(nb::module_& m, const char* name, E last, const char* doc) {
  nb::enum_<E> e(m, name, doc);
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const std::string_view n = to_string(static_cast<E>(i));
    e.value(n.data(), static_cast<E>(i));
  }
}

// "cpu", "cuda", "gpu", "cuda:N" or "gpu:N" (also a torch.device, through str()).
Device parse_device(nb::handle obj) {
  const std::string s = nb::cast<std::string>(nb::str(obj));
  if (s == "cpu") return Device::cpu();
  if (s == "cuda" || s == "gpu") return Device::cuda(0);
  for (std::string_view prefix : {"cuda:", "gpu:"}) {
    if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size()) continue;
    const char* first = s.data() + prefix.size();
    const char* last = s.data() + s.size();
    int index = 0;
    const auto [end, ec] = std::from_chars(first, last, index);
    if (ec == std::errc::result_out_of_range && std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; }))
      fail(ErrorCode::INVALID_VALUE, "create_handle: device '" + s + "': the index is beyond any device (at most " +
                                         std::to_string(std::numeric_limits<int>::max()) + ")");
    if (ec == std::errc() && end == last && *first != '-') return Device::cuda(index);
  }
  fail(ErrorCode::INVALID_VALUE, "create_handle: device '" + s + "' is not \"cpu\", \"cuda\" or \"cuda:N\"");
}

Handle create_handle(nb::handle device) {
  Handle h = device.is_none() ? Handle() : Handle(parse_device(device));
  check(h.status());
  return h;
}

void set_stream(Handle& h, nb::handle stream) { check(h.set_stream(to_stream(stream))); }
uintptr_t get_stream(const Handle& h) { return reinterpret_cast<uintptr_t>(h.get_stream()); }

}  // namespace

void init_enums(nb::module_& m) {
  bind_enum(m, "data_type", DataType::FP8_E5M2, "Element types (cudnn.data_type).");
  bind_enum(m, "pointwise_mode", PointwiseMode::BINARY_SELECT, "Pointwise operations.");
  bind_enum(m, "reduction_mode", ReductionMode::NORM2, "Reduction operations.");
  bind_enum(m, "resample_mode", ResampleMode::BILINEAR, "Pooling and resizing modes.");
  bind_enum(m, "norm_forward_phase", NormFwdPhase::TRAINING, "Normalization phases.");
  bind_enum(m, "diagonal_alignment", DiagonalAlignment::BOTTOM_RIGHT, "Where an attention mask's diagonal starts.");
  bind_enum(m, "heur_mode", HeurMode::FALLBACK, "Heuristic modes for create_execution_plans.");
  bind_enum(m, "error_code", ErrorCode::INTERNAL_ERROR, "Status codes; exceptions carry one as .code.");
  nb::enum_<BuildPlanPolicy>(m, "build_plan_policy", "Which plans build_plans builds.")
      .value("HEURISTICS_CHOICE", BuildPlanPolicy::HEURISTICS_CHOICE)
      .value("ALL", BuildPlanPolicy::ALL);
}

void init_handle(nb::module_& m) {
  nb::class_<Handle>(m, "Handle", "Where graphs run (a CPU or one CUDA device) and the stream they run on.")
      .def_prop_ro("device", [](const Handle& h) { return h.device().to_string(); },
                   "The device as a string: \"cpu\" or \"cuda:N\".")
      .def_prop_ro("is_cuda", [](const Handle& h) { return h.device().is_cuda(); },
                   "True when the handle's graphs run on a CUDA device.")
      .def("set_stream", &set_stream, nb::arg("stream").none(),
           "Run this handle's graphs on a CUDA stream (as dnngraph.set_stream(handle, stream)).\n\n"
           "Args:\n    stream: an int (cudaStream_t), None (the default stream), or an object with "
           ".cuda_stream (torch.cuda.Stream), .ptr (CuPy) or ._as_parameter_.\n\n"
           "Raises:\n    ValueError: `stream` is none of those, or the handle is on the CPU and the stream is not None.")
      .def("get_stream", &get_stream, "The handle's CUDA stream as an int (0: the default stream). Raises nothing.")
      .def_prop_rw("num_threads", &Handle::get_num_threads,
                   [](Handle& h, int n) { h.set_num_threads(n); },
                   "Threads the CPU engines use for this handle's graphs (0: one per core).")
      .def("__repr__", [](const Handle& h) { return "<dnngraph.Handle " + h.device().to_string() + ">"; });

  m.def("create_handle", &create_handle, nb::arg("device").none() = nb::none(),
        "A handle on device \"cpu\", \"cuda\", \"cuda:N\" (or a torch.device); None picks CUDA device 0 "
        "when usable, else the CPU.\n\n"
        "Args:\n    device: \"cpu\", \"cuda\", \"gpu\", \"cuda:N\", a torch.device, or None.\n\n"
        "Raises:\n    ValueError: `device` names no device (\"tpu\", \"cuda:-1\").\n"
        "    RuntimeError: the device cannot be had (no driver, no such GPU); the message says why.");
  m.def("set_stream", &set_stream, nb::arg("handle"), nb::arg("stream").none(),
        "Run the handle's graphs on `stream`: an int (cudaStream_t), None (the default stream), or an "
        "object with .cuda_stream (torch.cuda.Stream), .ptr (cupy) or ._as_parameter_.\n\n"
        "Args:\n    handle: a dnngraph.Handle.\n    stream: the stream, as above.\n\n"
        "Raises:\n    ValueError: `stream` is none of the accepted kinds, or the handle cannot take it.");
  m.def("get_stream", &get_stream, nb::arg("handle"),
        "The handle's CUDA stream as an int (0: the default stream).\n\nArgs:\n    handle: a dnngraph.Handle.");

  nb::class_<KernelCache>(m, "KernelCache", "Compiled kernels shared by graphs, in memory and optionally on disk.")
      .def(nb::init<>(), "An empty kernel cache, in memory only until set_directory is called.")
      .def_prop_rw("directory", &KernelCache::get_directory,
                   [](KernelCache& k, std::string d) { k.set_directory(std::move(d)); },
                   "The folder compiled kernels are also kept in (\"\": memory only).")
      .def("set_directory", [](KernelCache& k, std::string d) { k.set_directory(std::move(d)); }, nb::arg("directory"),
           "Keep compiled kernels on disk too, in `directory` (created if missing; \"\" turns the disk "
           "cache off). Kernels found there are loaded instead of compiled.\n\n"
           "Args:\n    directory: a folder path.")
      .def("size", &KernelCache::size, "The number of compiled kernels held in memory.")
      .def("hits", &KernelCache::hits, "How many kernel builds were served from the cache.")
      .def("misses", &KernelCache::misses, "How many kernel builds compiled a kernel the cache lacked.")
      .def("__len__", [](const KernelCache& k) { return k.size(); })
      .def("__repr__", [](const KernelCache& k) {
        return "<dnngraph.KernelCache size=" + std::to_string(k.size()) + " hits=" + std::to_string(k.hits()) +
               " misses=" + std::to_string(k.misses()) + ">";
      });
  m.def(
      "create_kernel_cache",
      [](std::string directory) {
        auto cache = std::make_shared<KernelCache>();
        if (!directory.empty()) cache->set_directory(std::move(directory));
        return cache;
      },
      nb::arg("directory") = "",
      "A kernel cache to share between graphs (pygraph(kernel_cache=...)).\n\n"
      "Args:\n    directory: a folder to keep the kernels in as well (\"\": memory only).");
}

void init_pygraph_norm(nb::module_& m);  // pygraph_norm.cpp: the training norms' methods
}  // namespace dnngraph::python

NB_MODULE(_dnngraph, m) {
  namespace py = dnngraph::python;
  m.doc() = "dnngraph: deep-learning kernels described as graphs (the C++ extension).";
  m.attr("__version__") = dnngraph::kVersionString;
  py::init_enums(m);
  py::init_errors(m);
  py::init_handle(m);
  py::init_tensor(m);
  py::init_engines(m);
  py::init_pygraph(m);
  py::init_pygraph_norm(m);
}
