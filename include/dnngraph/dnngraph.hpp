// dnngraph: deep-learning kernels described as graphs. The one header to include.
#pragma once
#include "dnngraph/attributes.hpp"
#include "dnngraph/graph.hpp"
#include "dnngraph/handle.hpp"
#include "dnngraph/kernel_cache.hpp"
#include "dnngraph/status.hpp"
#include "dnngraph/tensor.hpp"
#include "dnngraph/types.hpp"
#include "dnngraph/version.hpp"
