// `dnngraph tune --chart`: an SVG bar chart of every timed plan candidate, per partition, in ms,
// the chosen one marked; and the fastest/slowest spread the table and the JSON report too.
#pragma once
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "planning/autotune.hpp"
#include "planning/introspect.hpp"

namespace dnngraph::cli {

// The fastest and slowest measured time of a partition's candidates that ran; {0, 0} when none did.
struct TimeSpread {
  double fastest_s = 0;
  double slowest_s = 0;
};
TimeSpread spread_of(const std::vector<CandidateTiming>& timings, size_t partition);

// "0.1234 ms": the chart's and the table's unit is the millisecond, 4 significant digits.
std::string format_ms(double seconds);

// One horizontal bar per candidate, in rank order, per partition; a bar's length is its time over
// the partition's slowest, so the spread reads at a glance. The label column is as wide as the
// longest plan name (drawn in a monospace font, so its width is known).
Status write_tune_chart(const std::string& path, const std::string& title,
                        const std::vector<introspect::PartitionView>& parts, const std::vector<CandidateTiming>& timings);

}  // namespace dnngraph::cli
