# Installing dnngraph for C++ users: the static library and (DNNGRAPH_SHARED) the shared one, the
# headers, the CLI, a CMake package and a pkg-config file. find_package(dnngraph CONFIG) gives
# dnngraph::dnngraph_static (carrying its link needs: xxHash, libdl, threads), dnngraph::dnngraph_shared
# when it was built (needing nothing more) and dnngraph::dnngraph, the shared one when there is one
# (set dnngraph_USE_STATIC before find_package for the static one). Tested by
# tests/install/check_install.sh.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(dnngraph_installed_libraries dnngraph)
if(TARGET dnngraph_shared)
  list(APPEND dnngraph_installed_libraries dnngraph_shared)
endif()
install(TARGETS ${dnngraph_installed_libraries} EXPORT dnngraphTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/dnngraph DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT dnngraphTargets NAMESPACE dnngraph:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dnngraph)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/dnngraphConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/dnngraphConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dnngraph)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dnngraphConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dnngraphConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/dnngraphConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dnngraph)
# pkg-config: -ldnngraph finds the shared library first where there is one; its needs are then
# private (pkg-config --static lists them, for a link against libdnngraph.a).
set(dnngraph_pc_needs "-lxxhash -ldl -pthread")
if(DNNGRAPH_HAVE_LIBMVEC)
  string(APPEND dnngraph_pc_needs " -lmvec")
endif()
if(TARGET dnngraph_shared)
  set(DNNGRAPH_PC_LIBS "-ldnngraph")
  set(DNNGRAPH_PC_LIBS_PRIVATE "${dnngraph_pc_needs}")
else()
  set(DNNGRAPH_PC_LIBS "-ldnngraph ${dnngraph_pc_needs}")
  set(DNNGRAPH_PC_LIBS_PRIVATE "")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/dnngraph.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dnngraph.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dnngraph.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
