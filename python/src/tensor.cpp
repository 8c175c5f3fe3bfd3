// dnngraph.tensor: a tensor's description (TensorAttr). Setters return the tensor, so they chain
// as in the cuDNN frontend: Y.set_output(True).set_data_type(dnngraph.data_type.HALF).

#include "common.hpp"

namespace dnngraph::python {
namespace {

std::string repr(const TensorAttr& t) {
  auto list = [](const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::string s = "<dnngraph.tensor '" + t.get_name() + "' dim=" + list(t.get_dim()) +
                  " stride=" + list(t.get_stride()) + " data_type=" + std::string(to_string(t.get_data_type()));
  if (t.has_uid()) s += " uid=" + std::to_string(t.get_uid());
  if (t.get_is_pass_by_value()) s += " pass_by_value";
  if (t.get_is_virtual()) s += " virtual";
  return s + ">";
}

}  // namespace

void init_tensor(nb::module_& m) {
  using T = TensorPtr;
  nb::class_<TensorAttr>(m, "tensor", "A tensor of a graph: dims, strides (in elements), data type, uid.")
      .def("get_name", &TensorAttr::get_name)
      .def("set_name", [](T t, std::string n) { t->set_name(std::move(n)); return t; }, nb::arg("name"))
      .def("get_dim", &TensorAttr::get_dim)
      .def("set_dim", [](T t, std::vector<int64_t> d) { t->set_dim(std::move(d)); return t; }, nb::arg("dim"))
      .def("get_stride", &TensorAttr::get_stride)
      .def("set_stride", [](T t, std::vector<int64_t> s) { t->set_stride(std::move(s)); return t; },
           nb::arg("stride"))
      .def("get_data_type", &TensorAttr::get_data_type)
      .def("set_data_type", [](T t, nb::handle d) { t->set_data_type(to_data_type(d)); return t; },
           nb::arg("data_type"))
      .def("get_uid", &TensorAttr::get_uid)
      .def("set_uid", [](T t, int64_t uid) { t->set_uid(uid); return t; }, nb::arg("uid"))
      .def("clear_uid", [](T t) { t->clear_uid(); return t; })
      .def("get_is_virtual", &TensorAttr::get_is_virtual)
      .def("set_is_virtual", [](T t, bool v) { t->set_is_virtual(v); return t; }, nb::arg("value"))
      .def("get_is_output", &TensorAttr::get_is_output)
      .def("set_output", [](T t, bool v) { t->set_output(v); return t; }, nb::arg("value"))
      .def("get_is_pass_by_value", &TensorAttr::get_is_pass_by_value)
      .def("set_is_pass_by_value", [](T t, bool v) { t->set_is_pass_by_value(v); return t; }, nb::arg("value"))
      .def("get_value", &TensorAttr::get_value)
      .def("set_value", [](T t, double v) { t->set_value(v); return t; }, nb::arg("value"),
           "Make this a pass-by-value scalar with the value baked into the plan.")
      .def("get_volume", &TensorAttr::get_volume)
      .def_prop_ro("name", &TensorAttr::get_name)
      .def_prop_ro("dim", &TensorAttr::get_dim)
      .def_prop_ro("shape", &TensorAttr::get_dim)
      .def_prop_ro("stride", &TensorAttr::get_stride)
      .def_prop_ro("data_type", &TensorAttr::get_data_type)
      .def_prop_ro("uid", &TensorAttr::get_uid)
      .def("__repr__", &repr);
}

}  // namespace dnngraph::python
