# mk/aot.mk - ahead-of-time output for firmware (gen/aot.c, gen/cli_aot.c,
# tests/aot/, examples/firmware/).
#
# The AOT tests cross-compile for Cortex-M4 and RISC-V, run a harness on
# 32-bit ARM under qemu-user and check MISRA C:2012 with cppcheck's addon
# (tests/aot/test_misra.py).  Those toolchains are big and not needed to
# build bcgen, so they are not in DEPS (which stops the build when it
# cannot install them): `aot-deps`, run before `make test`, installs them
# when they are missing and make runs as root, and otherwise prints a loud
# warning; the tests that need a missing tool then report "# SKIP" (or fail
# with BCGEN_REQUIRE_CROSS=1).  g++ (the header's C++ test) is required.
DEPS += g++:/usr/bin/g++

AOT_DEPS = gcc-arm-none-eabi:/usr/bin/arm-none-eabi-gcc \
           libnewlib-arm-none-eabi:/usr/lib/arm-none-eabi/include/math.h \
           gcc-riscv64-unknown-elf:/usr/bin/riscv64-unknown-elf-gcc \
           picolibc-riscv64-unknown-elf:/usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs \
           gcc-arm-linux-gnueabihf:/usr/bin/arm-linux-gnueabihf-gcc \
           libc6-dev-armhf-cross:/usr/arm-linux-gnueabihf/lib/libc.a \
           qemu-user:/usr/bin/qemu-arm \
           cppcheck:/usr/bin/cppcheck

HEADERS += gen/aot.h
TEST_PREREQS += aot-deps
TEST_PREREQS_aot += aot-deps      # make test-aot

.PHONY: aot-deps firmware-example

aot-deps:
	@missing=""; for d in $(AOT_DEPS); do f=$${d#*:}; p=$${d%%:*}; \
	  [ -e "$$f" ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian packages for the AOT cross tests:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi; \
	missing=""; for d in $(AOT_DEPS); do f=$${d#*:}; p=$${d%%:*}; \
	  [ -e "$$f" ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "" >&2; \
	  echo "************************************************************************" >&2; \
	  echo "WARNING: missing Debian packages:$$missing" >&2; \
	  echo "The AOT cross-compile and qemu-arm tests that need them will be SKIPPED." >&2; \
	  echo "Install with: sudo apt-get install -y$$missing" >&2; \
	  echo "************************************************************************" >&2; \
	  echo "" >&2; \
	fi

# Builds examples/firmware with arm-none-eabi-gcc (tests/aot/test_firmware_example.py
# does the same in a scratch copy).
firmware-example: all aot-deps
	$(MAKE) -C examples/firmware BCGEN=$(abspath $(BUILD))/bcgen
