// Engines by id and the cuDNN frontend's names around them: knob_type, knob, behavior_note,
// numerical_note (and the filters by it), attention_implementation, backend_version(_string), destroy_handle, and
// pygraph's get_engine_count, get_knobs_for_engine, create_execution_plan, get_behavior_notes*.
#include <cctype>

#include "engines/cudnn/cudnn_api.hpp"
#include "pygraph.hpp"

namespace dnngraph::python {
namespace {

// The cuDNN frontend's knob types, in its order. A dnngraph knob whose name is one of these
// (lower case: "split_k", "tile_m", "stages", "kernel_cfg", cudnn's own) has that type; the
// others ("isa", "core", ...) are NOT_SET and go by name.
enum class KnobType : int {};
constexpr const char* kKnobTypes[] = {
    "NOT_SET",     "SWIZZLE",     "TILE_SIZE",  "EDGE",          "MULTIPLY",   "SPLIT_K_BUF",
    "TILEK",       "STAGES",      "REDUCTION_MODE", "SPLIT_K_SLC", "IDX_MODE",  "SPECFILT",
    "KERNEL_CFG",  "WORKSPACE",   "TILE_CGA_M", "TILE_CGA_N",    "BLOCK_SIZE", "OCCUPANCY",
    "ARRAY_SIZE_PER_THREAD", "SPLIT_COLS", "TILE_ROWS", "TILE_COLS", "LOAD_SIZE", "CTA_COUNT",
    "STREAM_K",    "SPLIT_P_SLC", "TILE_M",     "TILE_N",        "WARP_SPEC_CFG", "SPLIT_K",
    "TILE_CGA",    "SPLIT_RS",    "SINGLEBUFFER", "LDGC",        "SLICED",
};
constexpr int kKnobTypeCount = static_cast<int>(sizeof(kKnobTypes) / sizeof(kKnobTypes[0]));

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

KnobType knob_type_of(const std::string& name) {
  for (int i = 1; i < kKnobTypeCount; ++i)
    if (lower(kKnobTypes[i]) == name) return static_cast<KnobType>(i);
  return static_cast<KnobType>(0);
}

// Knobs keyed by knob_type or by name (a dnngraph knob without a frontend type).
std::map<std::string, int64_t> knobs_from(nb::dict d) {
  std::map<std::string, int64_t> out;
  for (auto [key, value] : d) {
    std::string name;
    if (nb::isinstance<KnobType>(key)) {
      const int t = static_cast<int>(nb::cast<KnobType>(key));
      if (t <= 0 || t >= kKnobTypeCount)
        fail(ErrorCode::INVALID_VALUE, "create_execution_plan: knob_type.NOT_SET names no knob");
      name = lower(kKnobTypes[t]);
    } else if (nb::isinstance<nb::str>(key)) {
      name = nb::cast<std::string>(key);
    } else {
      fail(ErrorCode::INVALID_VALUE, "create_execution_plan: a knob key must be a dnngraph.knob_type or a knob "
                                     "name; got " + py_type_name(key));
    }
    out[name] = nb::cast<int64_t>(value);
  }
  return out;
}

std::string knob_repr(const EngineKnob& k) {
  return "{\"knob_type\": \"" + std::string(kKnobTypes[static_cast<int>(knob_type_of(k.name))]) + "\", \"name\": \"" +
         k.name + "\", \"max_value\": " + std::to_string(k.max_value) + ", \"min_value\": " +
         std::to_string(k.min_value) + ", \"stride\": " + std::to_string(k.stride) + "}";
}

// dnngraph's own version as one number, the way cuDNN numbers its own (major*10000 + minor*100 + patch).
int64_t own_version() { return kVersionMajor * 10000 + kVersionMinor * 100 + kVersionPatch; }

int64_t backend_version() {
  const auto& cudnn = cudnn::library_report();
  return cudnn.ok ? static_cast<int64_t>(cudnn.version) : own_version();
}

std::string backend_version_string() {
  const auto& cudnn = cudnn::library_report();
  if (!cudnn.ok) return kVersionString;
  const size_t v = cudnn.version;  // 91900: 9.19.0 (cuDNN 9 numbers its versions major*10000 + minor*100 + patch)
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

void bind_enums(nb::module_& m) {
  nb::enum_<KnobType> kt(m, "knob_type", "The cuDNN frontend's knob types; dnngraph knobs of other names are NOT_SET.");
  for (int i = 0; i < kKnobTypeCount; ++i) kt.value(kKnobTypes[i], static_cast<KnobType>(i));
  nb::enum_<BehaviorNote>(m, "behavior_note", "Behaviour notes of a plan (get_behavior_notes).")
      .value("RUNTIME_COMPILATION", BehaviorNote::RUNTIME_COMPILATION)
      .value("SUPPORTS_CUDA_GRAPH_NATIVE_API", BehaviorNote::SUPPORTS_CUDA_GRAPH_NATIVE_API)
      .value("CUBLASLT_DEPENDENCY", BehaviorNote::CUBLASLT_DEPENDENCY);
}

}  // namespace

void init_engines(nb::module_& m) {
  bind_enums(m);
  nb::enum_<NumericalNote>(m, "numerical_note",
                           "The cuDNN frontend's numerical notes, as dnngraph's plans carry them (dnngraph/graph.hpp: "
                           "TENSOR_CORE, DOWN_CONVERT_INPUTS, NONDETERMINISTIC, WINOGRAD, WINOGRAD_TILE_6x6; the rest "
                           "are cuDNN's configs' alone).")
      .value("TENSOR_CORE", NumericalNote::TENSOR_CORE)
      .value("DOWN_CONVERT_INPUTS", NumericalNote::DOWN_CONVERT_INPUTS)
      .value("REDUCED_PRECISION_REDUCTION", NumericalNote::REDUCED_PRECISION_REDUCTION)
      .value("FFT", NumericalNote::FFT)
      .value("NONDETERMINISTIC", NumericalNote::NONDETERMINISTIC)
      .value("WINOGRAD", NumericalNote::WINOGRAD)
      .value("WINOGRAD_TILE_4x4", NumericalNote::WINOGRAD_TILE_4x4)
      .value("WINOGRAD_TILE_6x6", NumericalNote::WINOGRAD_TILE_6x6)
      .value("WINOGRAD_TILE_13x13", NumericalNote::WINOGRAD_TILE_13x13)
      .value("STRICT_NAN_PROP", NumericalNote::STRICT_NAN_PROP);
  nb::enum_<AttentionImplementation>(m, "attention_implementation",
                                     "sdpa(implementation=): AUTO only; dnngraph picks among its engines.")
      .value("AUTO", AttentionImplementation::AUTO)
      .value("COMPOSITE", AttentionImplementation::COMPOSITE)
      .value("UNIFIED", AttentionImplementation::UNIFIED);

  nb::class_<EngineKnob>(m, "knob", "A knob of an engine for a graph: the values the engine offers it.")
      .def_prop_ro("type", [](const EngineKnob& k) { return knob_type_of(k.name); },
            "The knob's cuDNN frontend type (knob_type.NOT_SET for dnngraph's own knobs, which go by "
            "name).")
      .def_ro("name", &EngineKnob::name,
            "The knob's name, as create_execution_plan takes it.")
      .def_ro("min_value", &EngineKnob::min_value,
            "The smallest value the engine offers.")
      .def_ro("max_value", &EngineKnob::max_value,
            "The largest value the engine offers.")
      .def_ro("stride", &EngineKnob::stride,
            "The step between offered values (0 when they are listed in `values`).")
      .def_ro("values", &EngineKnob::values,
            "Every value the engine offers for this graph.")
      .def("__repr__", &knob_repr);

  m.def("backend_version", &backend_version,
        "cuDNN's version number (91900 for 9.19.0) when dnngraph's cudnn engine has loaded cuDNN;\n"
        "else dnngraph's own (major*10000 + minor*100 + patch). Raises nothing.");
  m.def("backend_version_string", &backend_version_string,
        "cuDNN's version (\"9.19.0\") when dnngraph's cudnn engine has loaded cuDNN; else dnngraph's "
        "own. Raises nothing.");
  m.def("destroy_handle", [](const Handle&) {}, nb::arg("handle"),
        "For code written for cudnn: a dnngraph Handle is freed with its last reference, so this\n"
        "frees nothing.\n"
        "\n"
        "Args:\n"
        "    handle: a dnngraph.Handle (kept usable).");
}

void bind_pygraph_engines(nb::class_<PyGraph>& c) {
  c.def("get_engine_count", [](const PyGraph& g) {
    int64_t n = 0;
    check(g.graph.get_engine_count(n));
    return n;
  },
        "The number of engines; engine ids run 0..count-1 (dnngraph's registry ids, docs/python.md).\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: the graph has not been through build_operation_graph.");
  c.def("get_knobs_for_engine", [](const PyGraph& g, int64_t id) {
    std::vector<EngineKnob> knobs;
    check(g.graph.get_knobs_for_engine(id, knobs));
    return knobs;
  }, nb::arg("engine_id"),
        "The engine's knobs for this graph (a list of dnngraph.knob).\n"
        "\n"
        "Args:\n"
        "    engine_id: 0 .. get_engine_count() - 1.\n"
        "\n"
        "Raises:\n"
        "    ValueError: `engine_id` is out of range.\n"
        "    GraphNotSupportedError: the engine cannot run the graph (the message says why).\n"
        "    RuntimeError: called before build_operation_graph.");
  c.def("create_execution_plan", [](PyGraph& g, int64_t id, nb::dict knobs) {
    check(g.graph.create_execution_plan(id, knobs_from(knobs)));
  }, nb::arg("engine_id"), nb::arg("knobs") = nb::dict(),
        "Append a plan run by engine `engine_id` with `knobs`; build it with build_plans or\n"
        "build_plan_at_index.\n"
        "\n"
        "Args:\n"
        "    engine_id: 0 .. get_engine_count() - 1.\n"
        "    knobs: {knob_type or knob name: int value}; knobs left out take the engine's defaults.\n"
        "\n"
        "Raises:\n"
        "    ValueError: the id is out of range, a key is neither a knob_type nor a str, or a value is\n"
        "        one the engine does not offer.\n"
        "    GraphNotSupportedError: the engine cannot run the graph.");
  c.def("get_behavior_notes", [](const PyGraph& g) {
    std::vector<BehaviorNote> notes;
    check(g.graph.get_behavior_notes(notes));
    return notes;
  },
        "The behaviour notes (dnngraph.behavior_note) of the default plan, such as\n"
        "RUNTIME_COMPILATION.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: the plans are not built.");
  c.def("get_behavior_notes_for_plan_at_index", [](const PyGraph& g, int64_t i) {
    std::vector<BehaviorNote> notes;
    check(g.graph.get_behavior_notes_for_plan_at_index(i, notes));
    return notes;
  }, nb::arg("index"),
        "The behaviour notes (dnngraph.behavior_note) of candidate plan `index`.\n"
        "\n"
        "Args:\n"
        "    index: 0 .. get_execution_plan_count() - 1.\n"
        "\n"
        "Raises:\n"
        "    ValueError: `index` is out of range.\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("select_behavior_notes", [](PyGraph& g, const std::vector<BehaviorNote>& notes) {
    check(g.graph.select_behavior_notes(notes));
  }, nb::arg("notes"),
        "Keeps only the candidate plans that have every one of `notes` (dnngraph.behavior_note),\n"
        "as the cuDNN frontend's filter; explain() lists what was dropped.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("deselect_behavior_notes", [](PyGraph& g, const std::vector<BehaviorNote>& notes) {
    check(g.graph.deselect_behavior_notes(notes));
  }, nb::arg("notes"),
        "Drops the candidate plans that have any of `notes` (dnngraph.behavior_note), such as\n"
        "RUNTIME_COMPILATION; check_support fails if a partition is left with none.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("select_numeric_notes", [](PyGraph& g, const std::vector<NumericalNote>& notes) {
    check(g.graph.select_numeric_notes(notes));
  }, nb::arg("notes"),
        "Keeps only the candidate plans that have every one of `notes` (dnngraph.numerical_note),\n"
        "as the cuDNN frontend's filter; explain() lists what was dropped.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("deselect_numeric_notes", [](PyGraph& g, const std::vector<NumericalNote>& notes) {
    check(g.graph.deselect_numeric_notes(notes));
  }, nb::arg("notes"),
        "Drops the candidate plans that have any of `notes` (dnngraph.numerical_note), such as\n"
        "DOWN_CONVERT_INPUTS or WINOGRAD; check_support fails if a partition is left with none.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("deselect_workspace_greater_than", [](PyGraph& g, int64_t workspace) {
    check(g.graph.deselect_workspace_greater_than(workspace));
  }, nb::arg("workspace"),
        "build_plans skips plans that need more than `workspace` bytes of workspace (moving on to\n"
        "the next candidate of the partition).\n"
        "\n"
        "Raises:\n"
        "    ValueError: `workspace` is negative.\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("key", [](const PyGraph& g) {
    int64_t k = 0;
    check(g.graph.key(k));
    return k;
  },
        "The graph's key (an int) after build_operation_graph: equal for graphs of the same ops,\n"
        "dims, strides, types and attributes, for caching built graphs.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: called before build_operation_graph.");
}

}  // namespace dnngraph::python
