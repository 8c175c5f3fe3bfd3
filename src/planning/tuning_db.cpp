// Tuning DB file format, one record per line, fields separated by tabs:
//   dgtune1  <library version>  <fingerprint, 16 hex>  <nodes "0,1">  <device signature>
//   <engine name>  <knobs "a=1,b=2" or "-">  <seconds>  <xxh3 of everything before this field, 16 hex>
// Lines starting with '#' are comments. Tabs and newlines inside fields are written as spaces.
#include "planning/tuning_db.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "core/hash.hpp"
#include "core/log.hpp"
#include "dnngraph/version.hpp"
#include "planning/cache_files.hpp"

namespace dnngraph {
namespace {

constexpr const char* kTag = "dgtune1";
constexpr size_t kFields = 9;

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

bool parse_hex16(const std::string& s, uint64_t& v) {
  if (s.size() != 16) return false;
  v = 0;
  for (char c : s) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return true;
}

std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// The last field is a checksum of the line before it.
bool checksum_ok(const std::string& line, const std::vector<std::string>& f) {
  uint64_t sum = 0;
  return parse_hex16(f.back(), sum) && sum == hash64(std::string_view(line).substr(0, line.size() - f.back().size()));
}

// An intact line of another library version: kept when rewriting the file, not ours to use.
bool is_other_version(const std::string& line, std::string& version) {
  const auto f = split(line, '\t');
  if (f.size() != kFields || f[0] != kTag || f[1] == kVersionString || !checksum_ok(line, f)) return false;
  version = f[1];
  return true;
}

void warn(std::vector<std::string>& warnings, std::string w) {
  DG_LOG(ERROR) << "tuning DB: " << w;
  warnings.push_back(std::move(w));
}

constexpr const char* kHeader = "# dnngraph tuning DB: fields are documented in src/planning/tuning_db.cpp";

// What a DB file holds: this version's records (by key), other versions' lines (kept verbatim when
// rewriting), and its damaged lines.
struct Scan {
  std::map<std::string, TuningRecord> records;
  std::vector<std::string> kept;
  int damaged = 0;
  std::string first_damage;  // "line 3: checksum mismatch"
  bool has_header = false;

  // A file with neither our header nor an intact record is not a tuning DB: store leaves it alone.
  bool is_tuning_db() const { return has_header || !records.empty() || !kept.empty(); }
};

// Classifies every line, with a warning naming the file, the line and what is wrong for each skipped one.
Scan scan(const std::string& path, const std::string& text, std::vector<std::string>& warnings) {
  Scan out;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line == kHeader) out.has_header = true;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    TuningRecord r;
    std::string why, version;
    if (TuningDb::parse_line(line, r, why)) {
      out.records[r.key()] = std::move(r);
    } else if (is_other_version(line, version)) {
      out.kept.push_back(line);
      warn(warnings, where + "skipped a record of dnngraph " + version + " (this is " + kVersionString + ")");
    } else {
      if (out.damaged++ == 0) out.first_damage = "line " + std::to_string(line_no) + ": " + why;
      warn(warnings, where + "skipped a corrupt line: " + why);
    }
  }
  return out;
}

// "<path>.damaged-20261202T004512Z": where a damaged DB's bytes are kept before it is rewritten.
std::string damaged_copy_path(const std::string& path) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string aside = path + ".damaged-" + stamp;
  for (int n = 2; std::ifstream(aside).good(); ++n) aside = path + ".damaged-" + stamp + "-" + std::to_string(n);
  return aside;
}

// Before a rewrite: a file that is no tuning DB at all is left alone, and a DB with damaged lines
// is rewritten without them only after its bytes are kept beside it, so nothing is lost silently.
Status check_before_rewrite(const std::string& path, const std::string& text, const Scan& found,
                            std::vector<std::string>& warnings) {
  const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (!blank && !found.is_tuning_db())
    return {ErrorCode::IO_ERROR, "tuning DB: " + path + " is not a dnngraph tuning DB (" +
                                     (found.damaged ? found.first_damage : "no header and no record") +
                                     "); it was left untouched: name another file or remove it"};
  if (found.damaged == 0) return {};
  const std::string aside = damaged_copy_path(path);
  if (auto s = files::write_atomically(aside, text); !s.ok()) return s;
  warn(warnings, path + ": " + std::to_string(found.damaged) + " damaged line(s), the first at " +
                     found.first_damage + "; the file was kept as " + aside + " and rewritten with its " +
                     std::to_string(found.records.size() + found.kept.size()) + " intact record(s)");
  return {};
}

}  // namespace

std::string TuningRecord::key() const {
  return library_version + '\t' + hex16(fingerprint) + '\t' + nodes + '\t' + device;
}

std::string partition_nodes_key(const Partition& p) {
  std::string s;
  for (int n : p.nodes) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

std::string TuningDb::default_path() {
  if (const char* p = std::getenv("DNNGRAPH_TUNING_DB"); p && *p) return p;
  const std::string dir = files::default_cache_dir();
  return dir.empty() ? std::string() : dir + "/tuning.db";
}

std::string TuningDb::format_line(const TuningRecord& r) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.17g", r.seconds);  // round-trips exactly
  const std::string knobs = r.knobs.empty() ? "-" : knobs_to_string(r.knobs);
  std::string line = std::string(kTag) + '\t' + clean(r.library_version) + '\t' + hex16(r.fingerprint) + '\t' +
                     clean(r.nodes) + '\t' + clean(r.device) + '\t' + clean(r.engine) + '\t' + clean(knobs) + '\t' +
                     seconds + '\t';
  return line + hex16(hash64(line));
}

bool TuningDb::parse_line(const std::string& line, TuningRecord& r, std::string& why) {
  const auto f = split(line, '\t');
  if (f.size() != kFields) {
    why = "expected " + std::to_string(kFields) + " tab-separated fields, found " + std::to_string(f.size());
    return false;
  }
  if (f[0] != kTag) {
    why = "unknown record tag '" + f[0].substr(0, 32) + "'";
    return false;
  }
  if (!checksum_ok(line, f)) {
    why = "checksum mismatch";
    return false;
  }
  if (f[1] != kVersionString) {
    why = "made by dnngraph " + f[1];
    return false;
  }
  r.library_version = f[1];
  r.nodes = f[3];
  r.device = f[4];
  r.engine = f[5];
  if (!parse_hex16(f[2], r.fingerprint)) {
    why = "bad fingerprint '" + f[2] + "'";
    return false;
  }
  if (!parse_knobs(f[6], r.knobs)) {
    why = "bad knobs '" + f[6] + "'";
    return false;
  }
  char* end = nullptr;
  r.seconds = std::strtod(f[7].c_str(), &end);
  if (f[7].empty() || end != f[7].c_str() + f[7].size() || !(r.seconds >= 0)) {
    why = "bad time '" + f[7] + "'";
    return false;
  }
  return true;
}

Status TuningDb::load(std::vector<TuningRecord>& records, std::vector<std::string>& warnings) const {
  records.clear();
  if (path_.empty()) return {};
  std::string text;
  bool found = false;
  if (auto s = files::read_whole(path_, text, found); !s.ok()) return s;
  for (auto& [k, r] : scan(path_, text, warnings).records) records.push_back(std::move(r));
  return {};
}

std::optional<TuningRecord> TuningDb::find(uint64_t fingerprint, const std::string& nodes, const std::string& device,
                                           std::vector<std::string>& warnings) const {
  std::vector<TuningRecord> records;
  if (auto s = load(records, warnings); !s.ok()) {
    warn(warnings, s.message());
    return std::nullopt;
  }
  for (auto& r : records)
    if (r.fingerprint == fingerprint && r.nodes == nodes && r.device == device) return r;
  return std::nullopt;
}

Status TuningDb::store(const std::vector<TuningRecord>& records, std::vector<std::string>& warnings) const {
  if (path_.empty()) return {ErrorCode::IO_ERROR, "tuning DB: no path (set DNNGRAPH_CACHE_DIR or HOME)"};
  const size_t slash = path_.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (auto s = files::make_directories(path_.substr(0, slash)); !s.ok()) return s;
  }
  files::FileLock lock;
  if (auto s = lock.acquire(path_ + ".lock"); !s.ok()) return s;
  std::string text;
  bool found = false;
  if (auto s = files::read_whole(path_, text, found); !s.ok()) return s;
  Scan merged = scan(path_, text, warnings);
  if (auto s = check_before_rewrite(path_, text, merged, warnings); !s.ok()) return s;
  for (const auto& r : records) merged.records[r.key()] = r;
  std::string out = std::string(kHeader) + '\n';
  for (const auto& line : merged.kept) out += line + '\n';
  for (const auto& [k, r] : merged.records) out += format_line(r) + '\n';
  return files::write_atomically(path_, out);
}

}  // namespace dnngraph
