// A few lines of SVG: rectangles and text in user units, escaped; enough for a bar chart without
// a plotting dependency.
#pragma once
#include <sstream>
#include <string>

namespace dnngraph::cli {

class SvgWriter {
 public:
  // `attrs` is written as given: `font-weight="bold"`, `text-anchor="end"`.
  void rect(double x, double y, double w, double h, const std::string& fill);
  void text(double x, double y, const std::string& content, const std::string& attrs = "");
  // The whole document, `width` x `height`, on a white background; font-size 12, sans-serif.
  std::string document(double width, double height) const;

  static std::string escape(const std::string& s);

 private:
  std::ostringstream body_;
};

}  // namespace dnngraph::cli
