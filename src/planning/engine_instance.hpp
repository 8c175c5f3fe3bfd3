// The one instance of a stateless engine type, built on first use (thread-safe): what each
// engine's accessor hands the registry.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph {

template <class E>
const Engine& engine_instance() {
  static const E kEngine;
  return kEngine;
}

}  // namespace dnngraph
