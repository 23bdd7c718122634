# LibTorch from PyPI's torch wheel, pinned in python/requirements.txt and installed by
# scripts/setup.sh into the environment the checkout links as .venv (docs/gpu.md).
#
# Torch's own CMake config is not used: it refuses to configure without a CUDA toolkit (nvcc),
# and it puts libtorch_cuda on every target. These targets split the wheel the way the runtime
# loads it instead:
#   accel::torch       ATen, torch::nn, TorchScript, c10d with Gloo: libtorch_cpu and libc10.
#                      All a CPU job loads, so a CPU job starts without CUDA's libraries.
#   accel::torch_cuda  libtorch_cuda and libc10_cuda, with the CUDA and NCCL headers of the
#                      wheel's nvidia-* dependencies: only the CUDA back end (libaccel_cuda.so),
#                      which the worker opens for a `cuda` plan, links it.
# ACCEL_PYTHON_ENV names another environment holding the same pinned torch.

set(ACCEL_PYTHON_ENV "${PROJECT_SOURCE_DIR}/.venv" CACHE PATH
    "The Python environment holding the pinned torch wheel (scripts/setup.sh makes it)")

# The pin, read from the one file that sets it.
file(STRINGS "${PROJECT_SOURCE_DIR}/python/requirements.txt" accel_torch_pin REGEX "^torch==")
string(REGEX REPLACE "^torch==" "" ACCEL_TORCH_VERSION "${accel_torch_pin}")

file(GLOB accel_site_packages LIST_DIRECTORIES true "${ACCEL_PYTHON_ENV}/lib/python3*/site-packages")
set(accel_torch_dir "")
if(accel_site_packages)
  list(GET accel_site_packages 0 accel_site_packages)
  set(accel_torch_dir "${accel_site_packages}/torch")
endif()
if(NOT EXISTS "${accel_torch_dir}/lib/libtorch_cpu.so")
  message(FATAL_ERROR "LibTorch ${ACCEL_TORCH_VERSION} not found in ${ACCEL_PYTHON_ENV}: run scripts/setup.sh, "
                      "which installs python/requirements.txt there (or set ACCEL_PYTHON_ENV)")
endif()

# The installed version must be the pinned one: a stale environment would build against other headers.
file(STRINGS "${accel_torch_dir}/version.py" accel_torch_installed REGEX "^__version__ = ")
string(REGEX REPLACE "^__version__ = '([^'+]*).*" "\\1" accel_torch_installed "${accel_torch_installed}")
if(NOT accel_torch_installed STREQUAL ACCEL_TORCH_VERSION)
  message(FATAL_ERROR "${ACCEL_PYTHON_ENV} has torch ${accel_torch_installed}, python/requirements.txt pins "
                      "${ACCEL_TORCH_VERSION}: run scripts/setup.sh")
endif()
set(ACCEL_TORCH_LIBRARY_DIR "${accel_torch_dir}/lib")
set(ACCEL_NVIDIA_DIR "${accel_site_packages}/nvidia")

# accel::torch is written to a file that this build includes and the Accelerator package installs
# (runtime/accelerator): a program built against an installed Accel links the same LibTorch.
set(ACCEL_LIBTORCH_TARGETS "${PROJECT_BINARY_DIR}/AccelLibTorch.cmake")
file(WRITE "${ACCEL_LIBTORCH_TARGETS}" "\
# LibTorch ${ACCEL_TORCH_VERSION} (PyPI's torch wheel) as the Accel build that wrote this file found it.
if(NOT TARGET accel::torch)
  add_library(accel::torch INTERFACE IMPORTED)
  target_include_directories(accel::torch SYSTEM INTERFACE
    \"${accel_torch_dir}/include\" \"${accel_torch_dir}/include/torch/csrc/api/include\")
  # What the wheel's torch_cpu target gives its users: c10d with Gloo is declared only under these.
  # The wheel's include directory carries its own fmt (a newer major than the system's), found
  # before the system's by everything that includes LibTorch; LibTorch exports none of fmt's code,
  # so its users compile that fmt header-only, in its own versioned namespace.
  target_compile_definitions(accel::torch INTERFACE USE_DISTRIBUTED USE_C10D_GLOO FMT_HEADER_ONLY)
  target_link_libraries(accel::torch INTERFACE
    \"${ACCEL_TORCH_LIBRARY_DIR}/libtorch_cpu.so\" \"${ACCEL_TORCH_LIBRARY_DIR}/libc10.so\")
endif()
")
include("${ACCEL_LIBTORCH_TARGETS}")

# NCCL and the CUDA runtime come from the wheel's nvidia-* dependencies (libtorch_cuda finds them
# there through its own RUNPATH).
add_library(accel::torch_cuda INTERFACE IMPORTED GLOBAL)
target_include_directories(accel::torch_cuda SYSTEM INTERFACE
  "${ACCEL_NVIDIA_DIR}/cu13/include" "${ACCEL_NVIDIA_DIR}/cu13/include/cccl" "${ACCEL_NVIDIA_DIR}/nccl/include")
target_compile_definitions(accel::torch_cuda INTERFACE USE_CUDA USE_C10D_NCCL)
target_link_libraries(accel::torch_cuda INTERFACE accel::torch
  "${ACCEL_TORCH_LIBRARY_DIR}/libtorch_cuda.so" "${ACCEL_TORCH_LIBRARY_DIR}/libc10_cuda.so"
  "${ACCEL_NVIDIA_DIR}/nccl/lib/libnccl.so.2" "${ACCEL_NVIDIA_DIR}/cu13/lib/libcudart.so.13")

message(STATUS "Accel: LibTorch ${ACCEL_TORCH_VERSION} from ${accel_torch_dir}")
