# mk/safety.mk - the builds behind bcgen's safety promises (README "Safety"):
#
#   build-asan/  library, CLI and unit tests under AddressSanitizer +
#                UndefinedBehaviorSanitizer (LeakSanitizer included); the
#                unit, cli, golden and a diff subset run against it
#                (tests/safety/test_asan.py, `make test-asan`)
#   build-tsan/  library and the threaded API tests under ThreadSanitizer
#                (tests/safety/test_tsan.py, `make test-tsan`)
#   build-fuzz/  libFuzzer harnesses tests/fuzz/fuzz_*.c over an ASan+UBSan
#                library (`make fuzz`, FUZZ_SECONDS each; a short run of each
#                is tests/safety/test_fuzz.py inside `make test`)
#   valgrind     memcheck over the JIT path of the normal build, whose
#                tcc-generated code ASan cannot see (`make test-valgrind`)
#
# Each sanitizer build is the main Makefile run again with BUILD, CC and
# EXTRA_CFLAGS set, so it compiles exactly the same sources the same way.
# clang is used throughout: libFuzzer exists only there, and one compiler
# keeps the sanitizer runtimes consistent.

SAFETY_CC    ?= clang
ASAN_BUILD   ?= build-asan
TSAN_BUILD   ?= build-tsan
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
# make fuzz-diff: the differential JIT fuzzer's plain driver (no libFuzzer,
# no sanitizers, the optimised library) for DIFF_SECONDS from DIFF_SEED;
# DIFF_FLAGS=-keep-going counts every mismatch instead of stopping at one.
DIFF_SECONDS ?= 600
DIFF_SEED    ?= 1
DIFF_FLAGS   ?=

ASAN_CFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN_CFLAGS = -fsanitize=thread
FUZZ_CFLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
              -fno-omit-frame-pointer

# libclang-rt-14-dev: the sanitizer and libFuzzer runtimes for clang 14.
DEPS += libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a \
        valgrind:/usr/bin/valgrind

TEST_PREREQS += safety-builds

FUZZ_NAMES   = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS    = $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))
TSAN_TESTS   = test_api test_threads test_threads_run test_cache
SAFETY_MAKE  = $(MAKE) --no-print-directory CC=$(SAFETY_CC) OPT="-O1 -g" RUNTIME_OPT=-O1

.PHONY: safety-builds safety-asan safety-tsan safety-fuzz safety-asan-self safety-fuzz-self \
        test-asan test-tsan test-valgrind test-fuzz fuzz fuzz-diff

safety-builds: safety-asan safety-tsan safety-fuzz

safety-asan: $(BUILD)/.deps
	+@$(SAFETY_MAKE) BUILD=$(ASAN_BUILD) EXTRA_CFLAGS="$(ASAN_CFLAGS)" safety-asan-self

safety-tsan: $(BUILD)/.deps
	+@$(SAFETY_MAKE) BUILD=$(TSAN_BUILD) EXTRA_CFLAGS="$(TSAN_CFLAGS)" \
	  $(patsubst %,$(TSAN_BUILD)/tests/%,$(TSAN_TESTS))

safety-fuzz: $(BUILD)/.deps
	+@$(SAFETY_MAKE) BUILD=$(FUZZ_BUILD) EXTRA_CFLAGS="$(FUZZ_CFLAGS)" safety-fuzz-self

# These two run inside the sub-make, where BUILD is the sanitizer folder.
safety-asan-self: $(BUILD)/libbcgen.a $(BUILD)/bcgen $(UNIT_BIN)
safety-fuzz-self: $(FUZZ_BINS)

# The fuzz harness for operand specs links the CLI's parser: cli.c is
# compiled once more with its main renamed.
$(BUILD)/obj/cli_nomain.o: gen/cli.c $(HEADERS) gen/cli.h $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Dmain=bcgen_cli_main -c $< -o $@

FUZZ_CLI_OBJ = $(BUILD)/obj/cli_nomain.o $(filter-out $(BUILD)/obj/cli.o,$(CLI_OBJ))

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(BUILD)/libbcgen.a $(FUZZ_CLI_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -Igen -o $@ $< $(FUZZ_CLI_OBJ) $(BUILD)/libbcgen.a $(LIBS)

# The differential fuzzer as a plain program (tests/fuzz/fuzz_jit_diff.c with
# its own main) over the normal build: fast enough for hour-long runs.
$(BUILD)/fuzz/diff_jit: tests/fuzz/fuzz_jit_diff.c tests/fuzz/fuzz.h $(BUILD)/libbcgen.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DFUZZ_DIFF_MAIN -Igen -o $@ $< $(BUILD)/libbcgen.a $(LIBS)

# ---- running them -------------------------------------------------------------
test-asan: all safety-asan
	@BUILD=$(BUILD) $(PYTHON) tests/safety/test_asan.py

test-tsan: all safety-tsan
	@BUILD=$(BUILD) $(PYTHON) tests/safety/test_tsan.py

test-valgrind: all $(UNIT_BIN)
	@BUILD=$(BUILD) $(PYTHON) tests/safety/test_valgrind.py

test-fuzz: all safety-fuzz
	@BUILD=$(BUILD) $(PYTHON) tests/safety/test_fuzz.py

# make fuzz: every harness for FUZZ_SECONDS (default 60) from its seed corpus.
# New inputs go to $(FUZZ_BUILD)/corpus/NAME, crashes to $(FUZZ_BUILD)/crashes/;
# copy a crash into tests/fuzz/regress/NAME/ once fixed (test_fuzz.py replays it).
fuzz: safety-fuzz
	@status=0; for name in $(FUZZ_NAMES); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$name $(FUZZ_BUILD)/crashes; \
	  echo "fuzz_$$name: $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BUILD)/fuzz/fuzz_$$name -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=4096 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/crashes/$$name- \
	    $(FUZZ_BUILD)/corpus/$$name tests/fuzz/corpus/$$name \
	    2>$(FUZZ_BUILD)/fuzz_$$name.log || { status=1; tail -n 40 $(FUZZ_BUILD)/fuzz_$$name.log; }; \
	  grep -E '^stat::number_of_executed_units|^stat::new_units_added' $(FUZZ_BUILD)/fuzz_$$name.log; \
	done; exit $$status

# make fuzz-diff: DIFF_SECONDS of random kernels, JIT against the reference
# evaluator; mismatching inputs go to $(BUILD)/diff-crashes/ (replay one with
# `$(BUILD)/fuzz/diff_jit FILE`, shrink it with `-minimize FILE`, then keep
# it in tests/fuzz/regress/jit_diff/).
fuzz-diff: $(BUILD)/fuzz/diff_jit
	@mkdir -p $(BUILD)/diff-crashes
	$(BUILD)/fuzz/diff_jit -seed=$(DIFF_SEED) -seconds=$(DIFF_SECONDS) \
	  -crashes=$(BUILD)/diff-crashes $(DIFF_FLAGS)
