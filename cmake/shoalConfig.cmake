# CMake package of shoal's native env SDK, installed with the wheel.
#   find_package(shoal CONFIG REQUIRED)   # -Dshoal_DIR="$(python -c 'import shoal; print(shoal.get_cmake_dir())')"
#   shoal_add_env(my_env my_env.c)         # builds a shared library shoal.native.load_env can load
get_filename_component(SHOAL_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)

if(NOT TARGET shoal::sdk)
  add_library(shoal::sdk INTERFACE IMPORTED)
  set_target_properties(shoal::sdk PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${SHOAL_INCLUDE_DIR}")
endif()

# Env code is compiled with the flags of shoal's bundled envs (-O3) unless this is a Debug build.
function(shoal_add_env target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE shoal::sdk)
  if(MSVC)
    target_compile_options(${target} PRIVATE $<$<NOT:$<CONFIG:Debug>>:/O2>)
  else()
    target_compile_options(${target} PRIVATE $<$<NOT:$<CONFIG:Debug>>:-O3>)
  endif()
  set_target_properties(${target} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
endfunction()
