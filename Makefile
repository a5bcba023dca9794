# bcgen - build, test, install.  `make help` lists the targets.
#
# On a fresh Debian machine `make demo` and `make test` do all the set-up:
# the `deps` step installs the Debian packages below when run as root, and
# otherwise stops with the exact apt-get command to run.

PREFIX   ?= /usr/local
CC       ?= gcc
PYTHON   ?= /usr/bin/python3
BUILD    ?= build

WARN      = -Wall -Wextra -Werror
CSTD      = -std=c11
OPT      ?= -O2 -g
CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) -fPIC -pthread -D_GNU_SOURCE $(EXTRA_CFLAGS)
TCC_SYSTEM_LIB ?= /usr/lib/x86_64-linux-gnu/libtcc.a
# Debian's libtcc.a with its mprotect calls renamed to jit_tcc_mprotect
# (gen/jit.c), so libtcc never makes a page writable and executable; its
# objects are part of libbcgen.a and libbcgen.so.
TCC_LIB   = $(BUILD)/libtcc-wx.a
LIBS      = -ldl -lm -lpthread

# Debian packages the build and the tests need (package:file-that-proves-it).
DEPS = libtcc-dev:/usr/include/libtcc.h \
       libcmocka-dev:/usr/include/cmocka.h \
       python3-numpy:/usr/lib/python3/dist-packages/numpy/__init__.py \
       clang:/usr/bin/clang \
       pkg-config:/usr/bin/pkg-config \
       cmake:/usr/bin/cmake \
       binutils:/usr/bin/objdump

GEN_ALL  = $(wildcard gen/*.c)
CLI_SRC  = $(filter gen/cli%.c,$(GEN_ALL))
TOOL_SRC = gen/embed_templates.c
SHIM_SRC = gen/tccshim.c
LIB_SRC  = $(filter-out $(CLI_SRC) $(TOOL_SRC) $(SHIM_SRC),$(GEN_ALL))
LIB_OBJ  = $(patsubst gen/%.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(BUILD)/obj/templates.o
CLI_OBJ  = $(patsubst gen/%.c,$(BUILD)/obj/%.o,$(CLI_SRC))
TEMPLATES = $(wildcard templates/*.tmpl)
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
HEADERS  = runtime/bcgen.h runtime/runtime.h gen/internal.h gen/ops.h gen/kir.h gen/cprint.h \
           gen/cli.h gen/npy.h gen/vex.h

# Each part of the project that needs its own build steps or Debian packages
# (cross compilers, sanitizer builds, benchmarks) keeps them in mk/NAME.mk,
# which may add to DEPS (package:file), TEST_PREREQS (built before `make
# test`) and .PHONY targets of its own.
TEST_PREREQS =
include $(wildcard mk/*.mk)

.PHONY: all deps demo test check-deps \
        install uninstall clean help

# (the sweep too: a sweep binary older than the library it measures gave a
# whole session's measurements of code no longer on main)
all: $(BUILD)/.deps $(BUILD)/libbcgen.a $(BUILD)/libbcgen.so $(BUILD)/bcgen $(BUILD)/bench/sweep

help:
	@echo "make            build libbcgen.a, libbcgen.so, bcgen and the sweep into $(BUILD)/"
	@echo "make demo       build and show the main job on the seeds' example"
	@echo "make test       build and run every test (ends with 'N passed, N failed')"
	@echo "make test-SUITE one suite: unit, or a folder of tests/ (cli golden diff aot install safety fuzz)"
	@echo "make test-asan, test-tsan, test-valgrind   sanitizer and valgrind runs (part of make test)"
	@echo "make fuzz       every libFuzzer harness for FUZZ_SECONDS (60) each"
	@echo "make fuzz-diff  the JIT against the reference evaluator for DIFF_SECONDS"
	@echo "make bench-scale  a million kernels in one bounded context"
	@echo "make bench-sweep  300 random cases, JIT against cc -march=native (SWEEP_ARGS=--quick)"
	@echo "make bench-program  a fused program (forward + gradient) against separate kernels and NumPy"
	@echo "make bench      benchmark table against NumPy, numexpr, PyTorch and memcpy"
	@echo "make install PREFIX=/usr/local   header, libraries, bcgen, pkg-config file, CMake package, bcgen.mk"

# ---- dependencies ---------------------------------------------------------
$(BUILD)/.deps: Makefile
	@missing=""; for d in $(DEPS); do f=$${d#*:}; p=$${d%%:*}; \
	  [ -e "$$f" ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing Debian packages; run:  sudo apt-get update && sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi
	@mkdir -p $(BUILD) && touch $@

deps: $(BUILD)/.deps

# ---- library and CLI --------------------------------------------------------
$(BUILD)/obj/%.o: gen/%.c $(HEADERS) $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/embed_templates: $(TOOL_SRC) $(BUILD)/.deps
	$(CC) $(CFLAGS_ALL) $< -o $@

$(BUILD)/templates.c: $(BUILD)/embed_templates $(TEMPLATES)
	$(BUILD)/embed_templates $@ $(TEMPLATES)

$(BUILD)/obj/templates.o: $(BUILD)/templates.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Igen -c $< -o $@

$(BUILD)/libtcc-wx.a: $(BUILD)/.deps
	objcopy --redefine-sym mprotect=jit_tcc_mprotect --redefine-sym malloc=jit_tcc_malloc \
	  --redefine-sym calloc=jit_tcc_calloc --redefine-sym realloc=jit_tcc_realloc \
	  --redefine-sym free=jit_tcc_free $(TCC_SYSTEM_LIB) $@.tmp && mv $@.tmp $@
	@if nm $@ | grep -qE ' U (mprotect|malloc|calloc|realloc|free)$$'; then \
	  echo "$@ still calls mprotect or the C library's allocator (gen/jit.c)" >&2; rm -f $@; exit 1; fi

$(BUILD)/libbcgen.a: $(LIB_OBJ) $(TCC_LIB)
	rm -f $@ && cp $(TCC_LIB) $@.tmp && ar rs $@.tmp $(LIB_OBJ) && mv $@.tmp $@

# libtcc.a from Debian is not position-independent; gen/tccshim.c and a
# version script that keeps every non-bcg_ symbol local let it link into the
# shared library anyway (see the comment in tccshim.c).
$(BUILD)/libbcgen.so: $(LIB_OBJ) $(BUILD)/obj/tccshim.o runtime/bcgen.map $(TCC_LIB)
	$(CC) -shared -o $@ -Wl,-soname,libbcgen.so.0 -Wl,--version-script=runtime/bcgen.map \
	  $(LIB_OBJ) $(BUILD)/obj/tccshim.o $(TCC_LIB) $(LIBS)

$(BUILD)/bcgen: $(CLI_OBJ) $(BUILD)/libbcgen.a
	$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(BUILD)/libbcgen.a $(LIBS)

# ---- demo -------------------------------------------------------------------
demo: all
	@sh tests/demo.sh $(BUILD)/bcgen

# ---- tests ------------------------------------------------------------------
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libbcgen.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Wno-unused-parameter -Igen -o $@ $< $(BUILD)/libbcgen.a -lcmocka $(LIBS)

# The build steps run TEST_JOBS at a time even under a plain `make test`
# (the sanitizer and fuzz trees are three more builds of the library), and
# so do the test programs (tests/run.sh, JOBS).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

test: $(BUILD)/.deps
	+@$(MAKE) --no-print-directory -j$(TEST_JOBS) all $(UNIT_BIN) $(TEST_PREREQS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) JOBS=$(TEST_JOBS) sh tests/run.sh all

# make test-SUITE runs one suite: unit, or any folder tests/SUITE/, and
# builds only what it needs: `all`, the cmocka programs for unit (and
# safety), and what mk/*.mk add to TEST_PREREQS_SUITE (safety: all of
# TEST_PREREQS, its sanitizer trees).
.SECONDEXPANSION:
test-%: all $$(if $$(filter unit safety,$$*),$$(UNIT_BIN)) $$(TEST_PREREQS_$$*) \
        $$(if $$(filter safety,$$*),$$(TEST_PREREQS))
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh tests/run.sh $*

# ---- install ----------------------------------------------------------------
# the version of runtime/bcgen.h, for the CMake package's version file
VERSION := $(shell sed -n 's/^\#define BCG_VERSION "\(.*\)"/\1/p' runtime/bcgen.h)

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(PREFIX)/lib/cmake/bcgen $(DESTDIR)$(PREFIX)/share/bcgen
	install -m 644 runtime/bcgen.h $(DESTDIR)$(PREFIX)/include/bcgen.h
	install -m 644 $(BUILD)/libbcgen.a $(DESTDIR)$(PREFIX)/lib/libbcgen.a
	install -m 755 $(BUILD)/libbcgen.so $(DESTDIR)$(PREFIX)/lib/libbcgen.so.0
	ln -sf libbcgen.so.0 $(DESTDIR)$(PREFIX)/lib/libbcgen.so
	install -m 755 $(BUILD)/bcgen $(DESTDIR)$(PREFIX)/bin/bcgen
	sed -e 's|@PREFIX@|$(PREFIX)|g' runtime/bcgen.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/bcgen.pc
	install -m 644 cmake/bcgenConfig.cmake $(DESTDIR)$(PREFIX)/lib/cmake/bcgen/bcgenConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' cmake/bcgenConfigVersion.cmake.in \
	  > $(DESTDIR)$(PREFIX)/lib/cmake/bcgen/bcgenConfigVersion.cmake
	install -m 644 share/bcgen/bcgen.mk $(DESTDIR)$(PREFIX)/share/bcgen/bcgen.mk

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/bcgen.h $(DESTDIR)$(PREFIX)/lib/libbcgen.a \
	  $(DESTDIR)$(PREFIX)/lib/libbcgen.so $(DESTDIR)$(PREFIX)/lib/libbcgen.so.0 \
	  $(DESTDIR)$(PREFIX)/bin/bcgen $(DESTDIR)$(PREFIX)/lib/pkgconfig/bcgen.pc \
	  $(DESTDIR)$(PREFIX)/lib/cmake/bcgen/bcgenConfig.cmake \
	  $(DESTDIR)$(PREFIX)/lib/cmake/bcgen/bcgenConfigVersion.cmake \
	  $(DESTDIR)$(PREFIX)/share/bcgen/bcgen.mk

clean:
	rm -rf $(BUILD)
