// Kernels that compile here but have not yet run against ref on a GPU are not offered: an engine
// (or an op the code generator lowers) on the held-back list is refused by check() with the reason
// below, unless DNNGRAPH_UNCHECKED_ENGINES (comma-separated names) lists it. The GPU test run sets
// it, so a new kernel is checked there before any plan list takes it; once its tests have passed
// on a GPU, its name leaves kHeldBack (gpu_checked.cpp).
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace dnngraph::cuda {

// The names this build holds back (gpu_checked.cpp's kHeldBack).
std::span<const std::string_view> held_back_list();

// Whether `name` (an engine, or an op the code generator lowers) is on `list` and not released by
// DNNGRAPH_UNCHECKED_ENGINES on this run.
bool held_back(std::string_view name, std::span<const std::string_view> list = held_back_list());

// False, with why_not = "<what> not yet checked against ref on a GPU, so not offered (...)" (what
// may be empty), when `name` is held back; true otherwise.
bool checked_on_gpu(std::string_view name, const std::string& what, std::string& why_not,
                    std::span<const std::string_view> list = held_back_list());

}  // namespace dnngraph::cuda
