// JsonFields: reads the fields of one JSON object without throwing, keeping the first error (with
// the object's path) and which keys were read, so that unknown keys (typos) are reported too.
// Shared by the graph JSON reader (json.cpp) and the attribute reader (json_attr.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dnngraph/status.hpp"

namespace dnngraph {

// An integer that fits int64 (the parser keeps larger ones as unsigned).
inline bool is_int64(const nlohmann::json& v) {
  return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX});
}

// "an integer", "a string", ...: what a JSON value is, for messages.
inline std::string json_type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return is_int64(v) ? "an integer" : "an integer beyond int64";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// JSON has no inf or NaN: they travel as the strings "inf", "-inf", "nan".
inline nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
inline std::optional<double> json_to_double(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
    if (s == "nan") return std::nan("");
  }
  return std::nullopt;
}

class JsonFields {
 public:
  using json = nlohmann::json;
  // `obj` must be an object; `where` prefixes messages ("node 'conv0' at $.nodes[2]").
  JsonFields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(const char* key) const { return obj_.contains(key); }
  void mark_read(const char* key) { used_.insert(key); }

  std::optional<std::string> string(const char* key) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) return wrong(key, "a string", *v), std::nullopt;
    return v->get<std::string>();
  }
  std::optional<int64_t> integer(const char* key) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!is_int64(*v)) return wrong(key, "an integer", *v), std::nullopt;
    return v->get<int64_t>();
  }
  std::optional<double> number(const char* key) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    auto d = json_to_double(*v);
    if (!d) wrong(key, "a number (or \"inf\", \"-inf\", \"nan\")", *v);
    return d;
  }
  std::optional<bool> boolean(const char* key) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) return wrong(key, "true or false", *v), std::nullopt;
    return v->get<bool>();
  }
  std::optional<std::vector<int64_t>> integers(const char* key) {
    return array_of<int64_t>(key, "an array of integers", [](const json& e) -> std::optional<int64_t> {
      if (!is_int64(e)) return std::nullopt;
      return e.get<int64_t>();
    });
  }
  std::optional<std::vector<double>> numbers(const char* key) {
    return array_of<double>(key, "an array of numbers", json_to_double);
  }
  std::optional<std::vector<std::pair<int64_t, int64_t>>> pairs(const char* key) {
    using Pair = std::pair<int64_t, int64_t>;
    return array_of<Pair>(key, "an array of [start, end] integer pairs", [](const json& e) -> std::optional<Pair> {
      if (!e.is_array() || e.size() != 2 || !is_int64(e[0]) || !is_int64(e[1])) return std::nullopt;
      return Pair{e[0].get<int64_t>(), e[1].get<int64_t>()};
    });
  }
  // An enum by name. "NOT_SET" is read back where the enum has it, since the writer may write it.
  // Unknown data type names are INVALID_DATA_TYPE, other unknown names INVALID_VALUE.
  template <class E>
  std::optional<E> enumeration(const char* key, std::optional<E> (*from)(std::string_view), const char* what) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) return wrong(key, "a string", *v), std::nullopt;
    const auto& s = v->get_ref<const std::string&>();
    if (auto e = from(s)) return e;
    if (s == "NOT_SET" && to_string(E{}) == "NOT_SET") return E{};
    const bool is_type = std::string_view(what) == "data type";
    fail(is_type ? ErrorCode::INVALID_DATA_TYPE : ErrorCode::INVALID_VALUE, key,
         "unknown " + std::string(what) + " '" + s + "' (docs/graph-json.md lists the names)");
    return std::nullopt;
  }
  // A required field that is absent.
  void require(const char* key, const std::string& why) {
    if (!obj_.contains(key)) fail(ErrorCode::ATTRIBUTE_NOT_SET, key, "missing (" + why + ")");
  }
  void fail(ErrorCode code, const std::string& key, const std::string& rule) {
    if (error_.ok()) error_ = Status(code, where_ + "." + key + ": " + rule);
  }

  const Status& error() const { return error_; }
  // The first error; else an error naming the first key that nothing read. `what` names the
  // object's kind in that message ("op 'conv_fprop'", "tensor").
  Status finish(const std::string& what) const {
    if (!error_.ok()) return error_;
    for (const auto& [key, value] : obj_.items())
      if (!used_.count(key)) return {ErrorCode::INVALID_VALUE, where_ + "." + key + ": unknown field for " + what};
    return {};
  }

 private:
  const json* find(const char* key) {
    used_.insert(key);
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  // An array whose every element `element` reads (nullopt where an element is of the wrong kind).
  template <class T, class Element>
  std::optional<std::vector<T>> array_of(const char* key, const char* expected, Element element) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) return wrong(key, expected, *v), std::nullopt;
    std::vector<T> out;
    for (const auto& e : *v) {
      std::optional<T> x = element(e);
      if (!x) return wrong(key, expected, e, "holds"), std::nullopt;
      out.push_back(std::move(*x));
    }
    return out;
  }
  void wrong(const char* key, const char* expected, const json& got, const char* verb = "is") {
    fail(ErrorCode::INVALID_VALUE, key, std::string("expected ") + expected + ", but it " + verb + " " + json_type_name(got));
  }

  const json& obj_;
  std::string where_;
  std::set<std::string> used_;
  Status error_;
};

}  // namespace dnngraph
