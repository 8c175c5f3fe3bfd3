#include "tune_chart.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "svg_writer.hpp"

namespace dnngraph::cli {
namespace {

constexpr double kCharW = 7.3;  // a monospace glyph at font-size 12 (0.6 em), rounded up
constexpr double kBarW = 420, kNoteW = 170, kRowH = 22, kTop = 62;
constexpr const char* kChosen = "#2e7d32";
constexpr const char* kOther = "#1565c0";
constexpr const char* kGaveUp = "#9e9e9e";
constexpr const char* kFailed = "#c62828";

std::string row_label(const CandidateTiming& t) { return std::to_string(t.rank) + ". " + t.label; }

std::string bar_color(const CandidateTiming& t) {
  if (!t.error.empty()) return kFailed;
  return t.rank == 0 ? kChosen : t.gave_up ? kGaveUp : kOther;
}

std::string bar_note(const CandidateTiming& t) {
  if (!t.error.empty()) return "failed";
  return format_ms(t.seconds) + (t.rank == 0 ? "  chosen" : t.gave_up ? "  (gave up early)" : "");
}

void draw_legend(SvgWriter& svg, double y) {
  double x = 8;
  for (const auto& [color, name] : {std::pair{kChosen, "chosen (fastest)"}, std::pair{kOther, "other plans"},
                                    std::pair{kGaveUp, "gave up early (time when it did)"}, std::pair{kFailed, "failed"}}) {
    svg.rect(x, y - 10, 12, 12, color);
    svg.text(x + 16, y, name);
    x += 16 + 7.0 * static_cast<double>(std::string(name).size()) + 18;
  }
}

}  // namespace

TimeSpread spread_of(const std::vector<CandidateTiming>& timings, size_t partition) {
  TimeSpread s;
  for (const auto& c : timings)
    if (c.partition == partition && c.error.empty()) {
      s.fastest_s = s.fastest_s == 0 ? c.seconds : std::min(s.fastest_s, c.seconds);
      s.slowest_s = std::max(s.slowest_s, c.seconds);
    }
  return s;
}

std::string format_ms(double seconds) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g ms", seconds * 1e3);
  return buf;
}

Status write_tune_chart(const std::string& path, const std::string& title,
                        const std::vector<introspect::PartitionView>& parts, const std::vector<CandidateTiming>& timings) {
  size_t label_chars = 0;
  for (const auto& t : timings) label_chars = std::max(label_chars, row_label(t).size());
  const double label_w = 16 + kCharW * static_cast<double>(label_chars);
  SvgWriter svg;
  svg.text(8, 22, title, "font-size=\"15\"");
  draw_legend(svg, 44);
  double y = kTop;
  for (size_t p = 0; p < parts.size(); ++p) {
    const TimeSpread s = spread_of(timings, p);
    std::string head = "partition " + std::to_string(p) + " (" + parts[p].pattern + ")";
    if (s.fastest_s > 0) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.1fx", s.slowest_s / s.fastest_s);
      head += ": fastest " + format_ms(s.fastest_s) + ", slowest " + format_ms(s.slowest_s) + ", spread " + ratio;
    }
    svg.text(8, y + 15, head, "font-weight=\"bold\"");
    y += kRowH;
    for (const auto& t : timings) {
      if (t.partition != p) continue;
      const bool drawn = t.error.empty() && s.slowest_s > 0;
      const double w = drawn ? std::max(1.0, kBarW * t.seconds / s.slowest_s) : 0;
      svg.text(label_w - 8, y + 15, row_label(t), "text-anchor=\"end\" font-family=\"monospace\"");
      svg.rect(label_w, y + 3, w, kRowH - 6, bar_color(t));
      svg.text(label_w + w + 6, y + 15, bar_note(t), t.rank == 0 ? "font-weight=\"bold\"" : "");
      y += kRowH;
    }
    y += kRowH / 2;
  }
  std::ofstream out(path);
  out << svg.document(std::max(label_w + kBarW + kNoteW, 640.0), y + 10);
  out.close();
  if (!out) return {ErrorCode::IO_ERROR, "cannot write the chart '" + path + "'"};
  return {};
}

}  // namespace dnngraph::cli
