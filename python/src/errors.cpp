// Status codes become Python exceptions: ValueError for a bad graph, pack or value;
// dnngraph.GraphNotSupportedError when no engine supports a graph; RuntimeError otherwise.
// Every exception carries the library's message and the code as `.code`.
#include "common.hpp"

namespace dnngraph::python {
namespace {

bool is_value_error(ErrorCode c) {
  switch (c) {
    case ErrorCode::INVALID_VALUE:
    case ErrorCode::ATTRIBUTE_NOT_SET:
    case ErrorCode::SHAPE_DEDUCTION_FAILED:
    case ErrorCode::INVALID_DATA_TYPE:
    case ErrorCode::INVALID_GRAPH:
    case ErrorCode::INVALID_VARIANT_PACK:
    case ErrorCode::WORKSPACE_TOO_SMALL:
      return true;
    default:
      return false;
  }
}

// A message may quote bytes that are not UTF-8 (a name read from a damaged file, JSON the parser
// rejected): they are shown as \xNN escapes instead of failing the conversion and losing the error.
nb::str message_text(const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
  if (!text) throw nb::python_error();
  return nb::steal<nb::str>(text);
}

void translate(const std::exception_ptr& p, void* graph_not_supported) {
  try {
    std::rethrow_exception(p);
  } catch (const StatusError& e) {
    const ErrorCode code = e.status().code();
    PyObject* type = PyExc_RuntimeError;
    if (code == ErrorCode::GRAPH_NOT_SUPPORTED) type = static_cast<PyObject*>(graph_not_supported);
    else if (is_value_error(code)) type = PyExc_ValueError;
    nb::object exc = nb::borrow(type)(message_text(e.what()));
    exc.attr("code") = nb::cast(code);
    PyErr_SetObject(type, exc.ptr());
  }
}

}  // namespace

void init_errors(nb::module_& m) {
  PyObject* type = PyErr_NewExceptionWithDoc(
      "dnngraph.GraphNotSupportedError",
      "No engine supports (a part of) the graph. A RuntimeError; `.code` is error_code.GRAPH_NOT_SUPPORTED.",
      PyExc_RuntimeError, nullptr);
  if (!type) throw nb::python_error();
  m.attr("GraphNotSupportedError") = nb::steal(type);
  // The module keeps the type alive for as long as the translator can run.
  nb::register_exception_translator(translate, type);
}

}  // namespace dnngraph::python
