#include "svg_writer.hpp"

namespace dnngraph::cli {

std::string SvgWriter::escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

void SvgWriter::rect(double x, double y, double w, double h, const std::string& fill) {
  body_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\""
        << escape(fill) << "\"/>\n";
}

void SvgWriter::text(double x, double y, const std::string& content, const std::string& attrs) {
  body_ << "<text x=\"" << x << "\" y=\"" << y << "\"" << (attrs.empty() ? "" : " " + attrs) << ">" << escape(content)
        << "</text>\n";
}

std::string SvgWriter::document(double width, double height) const {
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << body_.str() << "</svg>\n";
  return out.str();
}

}  // namespace dnngraph::cli
