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
  if (t.get_is_constant()) s += " constant";
  if (t.get_is_virtual()) s += " virtual";
  return s + ">";
}

}  // namespace

void init_tensor(nb::module_& m) {
  using T = TensorPtr;
  nb::class_<TensorAttr>(m, "tensor", "A tensor of a graph: dims, strides (in elements), data type, uid.")
      .def("get_name", &TensorAttr::get_name, "The tensor's name (\"\" until one is given or validate names it).")
      .def("set_name", [](T t, std::string n) { t->set_name(std::move(n)); return t; }, nb::arg("name"),
           "Name the tensor (errors and explain() use it); returns the tensor.\n\nArgs:\n    name: any str.")
      .def("get_dim", &TensorAttr::get_dim, "The dims, outermost first ([] until set or inferred).")
      .def("set_dim", [](T t, std::vector<int64_t> d) { t->set_dim(std::move(d)); return t; }, nb::arg("dim"),
           "Set the dims; returns the tensor. Plans built before the change refuse to run.\n\n"
           "Args:\n    dim: a list of ints. Invalid dims (0, negative) are raised by validate() as ValueError.")
      .def("get_stride", &TensorAttr::get_stride, "The strides in elements ([] until set or inferred).")
      .def("set_stride", [](T t, std::vector<int64_t> s) { t->set_stride(std::move(s)); return t; },
           nb::arg("stride"),
           "Set the strides, in elements (they pick the layout: NHWC is [H*W*C, 1, W*C, C]); returns the "
           "tensor.\n\nArgs:\n    stride: a list of ints, one per dim (checked by validate(), a ValueError).")
      .def("get_data_type", &TensorAttr::get_data_type, "The element type (data_type.NOT_SET: the graph's default).")
      .def("set_data_type", [](T t, nb::handle d) { t->set_data_type(to_data_type(d)); return t; },
           nb::arg("data_type"),
           "Set the element type; returns the tensor.\n\n"
           "Args:\n    data_type: a dnngraph.data_type, a NumPy or PyTorch dtype, or a name (\"bfloat16\").\n\n"
           "Raises:\n    ValueError: `data_type` names no type dnngraph knows.")
      .def("get_uid", &TensorAttr::get_uid, "The uid that variant packs may key it by (-1: none assigned yet).")
      .def("set_uid", [](T t, int64_t uid) { t->set_uid(uid); return t; }, nb::arg("uid"),
           "Set the uid (variant packs keyed by uid use it); returns the tensor. Two tensors with one uid "
           "are raised by validate() as ValueError.\n\nArgs:\n    uid: an int >= 0.")
      .def("clear_uid", [](T t) { t->clear_uid(); return t; },
           "Drop the uid (validate assigns a fresh one); returns the tensor.")
      .def("get_is_virtual", &TensorAttr::get_is_virtual,
           "True for an intermediate the plans keep to themselves (no pointer in the variant pack).")
      .def("set_is_virtual", [](T t, bool v) { t->set_is_virtual(v); return t; }, nb::arg("value"),
           "Mark the tensor virtual (True) or user-visible (False); returns the tensor.\n\n"
           "Args:\n    value: a bool.")
      .def("get_is_output", &TensorAttr::get_is_output, "True when the tensor is a result the user reads (not virtual).")
      .def("set_output", [](T t, bool v) { t->set_output(v); return t; }, nb::arg("value"),
           "Make a produced tensor a graph output (True) or a virtual intermediate (False); returns the "
           "tensor.\n\nArgs:\n    value: a bool.")
      .def("get_is_pass_by_value", &TensorAttr::get_is_pass_by_value,
           "True for a host scalar baked into the plan (no pointer in the variant pack).")
      .def("set_is_pass_by_value", [](T t, bool v) { t->set_is_pass_by_value(v); return t; }, nb::arg("value"),
           "Mark the tensor a pass-by-value host scalar; returns the tensor.\n\nArgs:\n    value: a bool.")
      .def("get_is_constant", &TensorAttr::get_is_constant,
           "True when the user promised that the data at this tensor's pointer does not change while a "
           "plan lives (engines may pack it once per plan and pointer).")
      .def("set_is_constant", [](T t, bool v) { t->set_is_constant(v); return t; }, nb::arg("value"),
           "Promise (True) that the data at this input's pointer does not change while a plan lives, so that "
           "engines pack it once per plan and pointer (weights); returns the tensor.\n\nArgs:\n    value: a bool.")
      .def("get_value", &TensorAttr::get_value, "The baked-in scalar value, or None when none was set.")
      .def("set_value", [](T t, double v) { t->set_value(v); return t; }, nb::arg("value"),
           "Make this a pass-by-value scalar with the value baked into the plan (dims and strides [1] "
           "unless set); returns the tensor.\n\nArgs:\n    value: a float.")
      .def("set_ragged_offset",
           [](T t, T offset) { t->set_ragged_offset(std::move(offset)); return t; }, nb::arg("ragged_offset"),
           "Packed variable-length rows (THD layouts): batch b's rows start at element offset[b] of the data,\n"
           "read at run time from `ragged_offset`, a [b + 1, 1, 1, 1] INT32 or INT64 tensor (sdpa and\n"
           "sdpa_backward read it on Q, K, V, O, dO, dQ, dK, dV and page tables); returns the tensor.\n\n"
           "Args:\n    ragged_offset: the offsets' tensor.")
      .def("get_ragged_offset", &TensorAttr::get_ragged_offset, "The ragged offset's tensor, or None.")
      .def("get_volume", &TensorAttr::get_volume,
           "The number of elements (the product of the dims; 2**63 - 1 when it overflows int64).")
      .def_prop_ro("name", &TensorAttr::get_name, "The tensor's name (as get_name()).")
      .def_prop_ro("dim", &TensorAttr::get_dim, "The dims (as get_dim()).")
      .def_prop_ro("shape", &TensorAttr::get_dim, "The dims (as get_dim()), under NumPy's name.")
      .def_prop_ro("stride", &TensorAttr::get_stride, "The strides in elements (as get_stride()).")
      .def_prop_ro("data_type", &TensorAttr::get_data_type, "The element type (as get_data_type()).")
      .def_prop_ro("uid", &TensorAttr::get_uid, "The uid, -1 when none (as get_uid()).")
      .def("__repr__", &repr);
}

}  // namespace dnngraph::python
