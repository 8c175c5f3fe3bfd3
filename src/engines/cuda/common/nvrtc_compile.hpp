// Compiling CUDA C++ to a cubin with NVRTC, through the kernel cache. Every kernel source of
// src/engines/cuda/kernels is given to NVRTC as a header, so generated code includes them by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cuda {

// The NVRTC target for a device: "sm_90a" on Hopper (wgmma, setmaxnreg), "sm_XY" elsewhere.
std::string nvrtc_arch(int sm_version);
// The options every compile uses, besides the architecture.
const std::vector<std::string>& nvrtc_base_options();

// Compiles `source` for `arch` (e.g. "sm_90a"): the cubin, or COMPILATION_FAILED with NVRTC's log.
// `name` names the program in messages ("pointwise.cu"). DEVICE_NOT_AVAILABLE when NVRTC is missing.
Status nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                     std::vector<uint8_t>& cubin);
// The same with options beyond the base ones; `log` (when not null) gets NVRTC's log, which always
// holds ptxas's report (-v: registers, spills, warnings such as C7518).
Status nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                     const std::vector<std::string>& extra_options, std::vector<uint8_t>& cubin, std::string* log);

// Whether ptxas's report says it serialized a kernel's wgmma (C7515, C7518, ...: each waits for the
// one before, so the tensor pipe drains every k step). ptxas says so only under -v.
bool ptxas_serialized_wgmma(const std::string& log);
// The compiles of this process whose wgmma ptxas serialized: a performance bug in the generated
// kernel, which nvrtc_compile also logs. Each entry is the program's name and its KernelConfig lines. The AOT
// generator refuses to ship such a kernel and lists them (tools/aot).
std::vector<std::string> serialized_wgmma_compiles();

// nvrtc_compile through the target's kernel cache (memory + disk), when it has one: a source
// compiled before for this arch and NVRTC version is not compiled again.
Status compile_cached(const Target& t, const std::string& source, const std::string& name, std::vector<uint8_t>& cubin);

}  // namespace dnngraph::cuda
