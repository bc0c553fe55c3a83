# install(...) and export so another CMake project can:
#   find_package(tapegrad CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE tapegrad::nn)   # or tapegrad::lm (training), tapegrad::lab (sweeps, reports)
# and, built with MPI, the optional component:
#   find_package(tapegrad CONFIG REQUIRED COMPONENTS mpi)
#   target_link_libraries(app PRIVATE tapegrad::mpi)  # MpiCommunicator
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tapegrad_core tapegrad_nn tapegrad_lm tapegrad_lab EXPORT tapegradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY lib/tapegrad nn/tapegrad lm/tapegrad lab/tapegrad DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)
install(EXPORT tapegradTargets NAMESPACE tapegrad:: DESTINATION ${_cmake_dir})
if(TARGET tapegrad_mpi)  # its own export set: only consumers that ask for the component need MPI
  install(TARGETS tapegrad_mpi EXPORT tapegradMpiTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT tapegradMpiTargets NAMESPACE tapegrad:: DESTINATION ${_cmake_dir})
endif()
configure_package_config_file(cmake/tapegradConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tapegradConfig.cmake INSTALL_DESTINATION ${_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tapegradConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/tapegradConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/tapegradConfigVersion.cmake
  cmake/TapegradDependencies.cmake
  DESTINATION ${_cmake_dir})
