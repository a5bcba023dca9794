# arm-none-eabi.cmake - a CMake toolchain file for a Cortex-M4F with the
# GNU Arm Embedded toolchain (Debian: gcc-arm-none-eabi, libnewlib-arm-none-eabi).
#
#   cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=arm-none-eabi.cmake \
#         -DCMAKE_PREFIX_PATH=/where/bcgen/is/installed
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# there is no OS to run a test program on: try_compile builds a library
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CPU_FLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
set(CMAKE_C_FLAGS_INIT "${CPU_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${CPU_FLAGS} --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")

# programs (bcgen among them) run on the build machine; libraries and
# headers come from the target's tree; packages (bcgen's CMake package,
# which only brings the generator to a cross build) from both
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
