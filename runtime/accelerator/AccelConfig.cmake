# find_package(Accel): the imported target Accel::accelerator (the Accelerator library and its
# header <accel/accelerator.h>). Its interface names LibTorch's targets, so LibTorch is found
# first, the way Accel's own build finds it.
include(CMakeFindDependencyMacro)
find_dependency(Torch)
include(${CMAKE_CURRENT_LIST_DIR}/AccelTargets.cmake)
