#include "planning/knobs.hpp"

#include <charconv>

namespace dnngraph {

std::string knobs_to_string(const Knobs& k) {
  std::string s;
  for (const auto& [name, value] : k) s += (s.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return s;
}

bool parse_knobs(const std::string& text, Knobs& knobs) {
  knobs.clear();
  if (text.empty() || text == "-") return true;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item(text.data() + start, end - start);
    const size_t eq = item.find('=');
    if (eq == 0 || eq == std::string_view::npos) return false;
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(item.data() + eq + 1, item.data() + item.size(), v);
    if (ec != std::errc() || ptr != item.data() + item.size() || eq + 1 == item.size()) return false;
    if (!knobs.emplace(std::string(item.substr(0, eq)), v).second) return false;  // a knob named twice
    if (end == text.size()) return true;
    start = end + 1;
  }
}

}  // namespace dnngraph
