#include "core/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace dnngraph::log {
namespace {
struct Sink {
  int level = 0;
  FILE* file = stderr;
  std::mutex mutex;
  Sink() {
    if (const char* l = std::getenv("DNNGRAPH_LOG_LEVEL")) level = std::atoi(l);
    if (const char* f = std::getenv("DNNGRAPH_LOG_FILE")) {
      if (FILE* opened = std::fopen(f, "a")) file = opened;
    }
  }
};
Sink& sink() {
  static Sink s;  // built once, on first use
  return s;
}
}  // namespace

int level() { return sink().level; }

void write(Level lvl, const std::string& line) {
  static const char* kNames[] = {"", "E", "I", "D"};
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::fprintf(s.file, "[dnngraph %s] %s\n", kNames[lvl], line.c_str());
  std::fflush(s.file);
}

}  // namespace dnngraph::log
