# The library's ahead-of-time kernels (src/planning/aot_kernels.hpp). With DNNGRAPH_AOT_KERNELS
# on, dnngraph_aot_gen (tools/aot) links the library's objects with an empty table, plans the
# example graphs for a described H200 and compiles their own-engine kernels with NVRTC (no GPU),
# writing generated/dnngraph_aot_kernels.{cpp,bin}; the library is linked with that table. The
# cubins are kept in build/aot_cache, so a rebuild that changed no kernel source compiles nothing.
# Off (or without NVRTC at build time) the table is empty and every kernel is compiled at run time.
set(DNNGRAPH_AOT_NONE ${CMAKE_CURRENT_SOURCE_DIR}/tools/aot/aot_none.cpp)
if(NOT DNNGRAPH_AOT_KERNELS)
  set(DNNGRAPH_AOT_TABLE ${DNNGRAPH_AOT_NONE})
  return()
endif()

add_executable(dnngraph_aot_gen ${CMAKE_CURRENT_SOURCE_DIR}/tools/aot/aot_gen.cpp ${DNNGRAPH_AOT_NONE}
                                $<TARGET_OBJECTS:dnngraph_objects>)
target_include_directories(dnngraph_aot_gen PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(dnngraph_aot_gen PRIVATE Threads::Threads nlohmann_json::nlohmann_json PkgConfig::XXHASH ${CMAKE_DL_LIBS})
target_compile_options(dnngraph_aot_gen PRIVATE ${DNNGRAPH_WARNINGS})

# The tutorial and tour graphs; the tour also runs the matmul epilogue with dynamic shapes at
# batches 4, 8 and 16 (tools/dnngraph/tour_workloads.cpp, TourSizes::full). The conv and SDPA
# tutorials also ship every candidate's shape-generic kernel (planning/shipped_kernels.hpp), so
# build_plans(ALL) and autotuning of such graphs, at any shape, load kernels instead of compiling.
file(GLOB DNNGRAPH_AOT_GRAPHS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/examples/graphs/*.json)
set(DNNGRAPH_AOT_TABLE ${CMAKE_CURRENT_BINARY_DIR}/generated/dnngraph_aot_kernels.cpp)
set(DNNGRAPH_AOT_BLOB ${CMAKE_CURRENT_BINARY_DIR}/generated/dnngraph_aot_kernels.bin)
add_custom_command(
  OUTPUT ${DNNGRAPH_AOT_TABLE} ${DNNGRAPH_AOT_BLOB}
  COMMAND dnngraph_aot_gen --out-cpp ${DNNGRAPH_AOT_TABLE} --out-bin ${DNNGRAPH_AOT_BLOB}
          --cache ${CMAKE_CURRENT_BINARY_DIR}/aot_cache --dynamic tutorial_matmul_epilogue_amax.json --batches 4,8
          --generic tutorial_conv_bias_relu.json --generic tutorial_conv_bias_relu_small.json
          --generic tutorial_sdpa_causal.json --generic tutorial_sdpa_causal_small.json
          ${DNNGRAPH_AOT_GRAPHS}
  DEPENDS dnngraph_aot_gen ${DNNGRAPH_AOT_GRAPHS}
  COMMENT "Compiling the ahead-of-time sm_90a kernels (NVRTC, no GPU)"
  VERBATIM)
set_source_files_properties(${DNNGRAPH_AOT_TABLE} PROPERTIES OBJECT_DEPENDS ${DNNGRAPH_AOT_BLOB})
