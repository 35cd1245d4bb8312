# CMake package of shoal's native env SDK.
#   find_package(shoal CONFIG REQUIRED)   # with -Dshoal_DIR=$(python -m shoal.sdk --cmake-dir)
#   shoal_add_env(my_env my_env.c)         # builds a shared library shoal can load
get_filename_component(SHOAL_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)

if(NOT TARGET shoal::sdk)
  add_library(shoal::sdk INTERFACE IMPORTED)
  set_target_properties(shoal::sdk PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${SHOAL_INCLUDE_DIR}")
endif()

function(shoal_add_env target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE shoal::sdk)
  set_target_properties(${target} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
endfunction()
