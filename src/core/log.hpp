// Logging to stderr or DNNGRAPH_LOG_FILE, gated by DNNGRAPH_LOG_LEVEL (0 off, 1 errors, 2 info, 3 debug).
#pragma once
#include <sstream>
#include <string>

namespace dnngraph::log {

enum Level : int { OFF = 0, ERROR = 1, INFO = 2, DEBUG = 3 };

int level();  // read once from the environment
void write(Level lvl, const std::string& line);

}  // namespace dnngraph::log

// Usage: DG_LOG(INFO) << "engine " << name << " rejected: " << reason;  (no cost when disabled)
#define DG_LOG(LVL)                                                        \
  if (::dnngraph::log::level() < ::dnngraph::log::LVL) {                   \
  } else                                                                   \
    ::dnngraph::log::Line(::dnngraph::log::LVL).stream()

namespace dnngraph::log {
class Line {
 public:
  explicit Line(Level lvl) : lvl_(lvl) {}
  ~Line() { write(lvl_, ss_.str()); }
  std::ostringstream& stream() { return ss_; }

 private:
  Level lvl_;
  std::ostringstream ss_;
};
}  // namespace dnngraph::log
