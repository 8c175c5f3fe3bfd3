#include "engines/cuda/common/kernel_config.hpp"

namespace dnngraph::cuda {

std::string kernel_dtype(DataType t) { return "dg::DT_" + std::string(to_string(t)); }

KernelConfigSource::KernelConfigSource() { os_ << "struct " << kKernelConfig << " {\n"; }

KernelConfigSource& KernelConfigSource::tile(const MmaSyncTile& t) {
  dtype("kDataType", t.dtype).value("kTileM", t.tile_m).value("kTileN", t.tile_n).value("kTileK", t.tile_k);
  return value("kWarpsM", t.warps_m).value("kWarpsN", t.warps_n).value("kStages", t.stages);
}

KernelConfigSource& KernelConfigSource::tile(const WgmmaTile& t) {
  if (t.b_dtype != DataType::NOT_SET && t.b_dtype != t.dtype)  // dg_types.cuh's operand-pair code
    os_ << "  enum : int { kDataType = " << kernel_dtype(t.dtype) << "_" << to_string(t.b_dtype).substr(4) << " };\n";
  else
    dtype("kDataType", t.dtype);
  return value("kTileN", t.tile_n).value("kStages", t.stages).flag("kSplitK", t.split_k);
}

KernelConfigSource& KernelConfigSource::dtype(std::string_view member, DataType t) {
  os_ << "  enum : int { " << member << " = " << kernel_dtype(t) << " };\n";
  return *this;
}

KernelConfigSource& KernelConfigSource::value(std::string_view member, int64_t v) {
  os_ << "  enum : int { " << member << " = " << v << " };\n";
  return *this;
}

KernelConfigSource& KernelConfigSource::flag(std::string_view member, bool v) {
  os_ << "  enum : bool { " << member << " = " << (v ? "true" : "false") << " };\n";
  return *this;
}

KernelConfigSource& KernelConfigSource::type(std::string_view member, std::string_view type) {
  os_ << "  using " << member << " = " << type << ";\n";
  return *this;
}

std::string KernelConfigSource::str() const { return os_.str() + "};\n"; }

}  // namespace dnngraph::cuda
