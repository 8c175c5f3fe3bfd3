// The public API returns a Status from every call and never throws: no_throw runs a step and
// turns an exception that escapes it (an allocation that failed, a bug) into an error naming the
// step, so a user's process is not aborted by a graph too large for the machine.
#pragma once
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "dnngraph/status.hpp"

namespace dnngraph {

template <class F>
Status no_throw(ErrorCode out_of_memory_code, std::string_view step, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return {out_of_memory_code, std::string(step) + ": out of host memory (std::bad_alloc)"};
  } catch (const std::exception& e) {
    return {ErrorCode::INTERNAL_ERROR, std::string(step) + ": unexpected exception: " + e.what()};
  } catch (...) {
    return {ErrorCode::INTERNAL_ERROR, std::string(step) + ": unexpected exception"};
  }
}

}  // namespace dnngraph
