# find_package(Accel): the imported target Accel::accelerator (the Accelerator library and its
# header <accel/accelerator.h>). Its interface names accel::torch, the LibTorch the installing
# build was made against, defined first.
include(${CMAKE_CURRENT_LIST_DIR}/AccelLibTorch.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/AccelTargets.cmake)
