# CMake package of shoal's native env SDK, installed with the wheel.
#   find_package(shoal CONFIG REQUIRED)   # -Dshoal_DIR="$(python -c 'import shoal; print(shoal.get_cmake_dir())')"
#   shoal_add_env(my_env my_env.c)         # builds a shared library shoal.native.load_env can load
get_filename_component(SHOAL_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)

if(NOT TARGET shoal::sdk)
  add_library(shoal::sdk INTERFACE IMPORTED)
  set_target_properties(shoal::sdk PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${SHOAL_INCLUDE_DIR}")
endif()

include(CheckCCompilerFlag)

# Env code is compiled with the flags of shoal's bundled envs (-O3) unless this is a Debug build. On ELF
# x86-64, thread-locals (the rand() route) go through TLS descriptors where the compiler has them: no
# __tls_get_addr call per access, and no bytes of the static TLS reserve dlopen'ed libraries share.
function(shoal_add_env target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE shoal::sdk)
  if(MSVC)
    target_compile_options(${target} PRIVATE $<$<NOT:$<CONFIG:Debug>>:/O2>)
  else()
    target_compile_options(${target} PRIVATE $<$<NOT:$<CONFIG:Debug>>:-O3>)
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT MSVC AND "C" IN_LIST languages)
    check_c_compiler_flag(-mtls-dialect=gnu2 SHOAL_HAS_TLS_DESCRIPTORS)
    if(SHOAL_HAS_TLS_DESCRIPTORS)
      target_compile_options(${target} PRIVATE -mtls-dialect=gnu2)
    endif()
  endif()
  set_target_properties(${target} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
endfunction()
