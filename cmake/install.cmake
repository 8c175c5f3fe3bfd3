# Installing dnngraph for C++ users: the static library, its headers, the CLI, a CMake package
# (find_package(dnngraph CONFIG) gives dnngraph::dnngraph, which carries its link needs: xxHash,
# libdl, threads) and a pkg-config file. Tested by tests/install/check_install.sh.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS dnngraph EXPORT dnngraphTargets
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
configure_file(${CMAKE_CURRENT_LIST_DIR}/dnngraph.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dnngraph.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dnngraph.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
