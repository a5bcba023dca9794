# mk/bench.mk - `make bench`: the performance table of issue 5.
#
# bench/driver.c times bcgen (and the reference evaluator and a memcpy
# bound) through the C API; bench/bench.py times NumPy, numexpr and PyTorch
# in-process on the same cases, merges both into one table and writes it as
# JSON.  python3-numexpr and python3-numba are benchmark-only dependencies,
# installed here and not in DEPS (the tests do not need them); PyTorch is
# timed only where it is installed.  Benchmarks are not tests: nothing here runs under `make test`.
#
#   make bench                      the full table into bench/results.json
#   make bench BENCH_ARGS=--quick   fewer repetitions (a smoke run)
#   make bench BENCH_ARGS="--only sum_rows,grad_b"   some cases only
#   make bench BENCH_JSON=/tmp/r.json

# This fragment is read before the main Makefile's first rule; keep `all`
# the default goal.
.DEFAULT_GOAL := all

BENCH_JSON ?= bench/results.json
BENCH_ARGS ?=

.PHONY: bench bench-deps

# bench/hand.c: the hand-written loop of each case and the non-temporal
# bound, compiled as a programmer would compile them (no FMA contraction,
# so its results are bcgen's and the driver checks them).
$(BUILD)/bench/hand.o: bench/hand.c bench/hand.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O3 -march=native -ffp-contract=off -c -o $@ $<

$(BUILD)/bench/driver: bench/driver.c bench/hand.h $(BUILD)/bench/hand.o $(BUILD)/libbcgen.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O2 -Igen -o $@ $< $(BUILD)/bench/hand.o $(BUILD)/libbcgen.a $(LIBS)

BENCH_PEERS = python3-numexpr:/usr/lib/python3/dist-packages/numexpr/__init__.py \
              python3-numba:/usr/lib/python3/dist-packages/numba/__init__.py

bench-deps:
	@for d in $(BENCH_PEERS); do f=$${d#*:}; p=$${d%%:*}; \
	  [ -e "$$f" ] && continue; \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing $$p (benchmark peer)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$p >/dev/null || exit 1; \
	  else \
	    echo "bench: $$p is not installed (sudo apt-get install $$p); its column stays empty" >&2; \
	  fi; \
	done

bench: all $(BUILD)/bench/driver bench-deps
	$(PYTHON) bench/bench.py --driver $(BUILD)/bench/driver --cases bench/cases.txt \
	  --json $(BENCH_JSON) $(BENCH_ARGS)

# `make bench-scale`: a million distinct kernels in one bounded context, and
# cache hits among a million cached ones (bench/scale.c; takes minutes).
SCALE_KERNELS ?= 1000000
SCALE_CAPACITY ?= 10000

.PHONY: bench-scale

$(BUILD)/bench/scale: bench/scale.c $(BUILD)/libbcgen.a runtime/bcgen.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O2 -Iruntime -o $@ $< $(BUILD)/libbcgen.a $(LIBS)

bench-scale: all $(BUILD)/bench/scale
	$(BUILD)/bench/scale $(SCALE_KERNELS) $(SCALE_CAPACITY)

# `make bench-sweep`: the yardstick of issue 11 (bench/sweep.c).  Seeded
# random cases, each compiled with the default JIT and with the cc backend
# (gcc -O3 -march=native), timed interleaved and checked against each
# other; prints the distribution of cc time / JIT time and writes it as JSON.
#   make bench-sweep SWEEP_ARGS=--quick     30 cases
#   make bench-sweep SWEEP_SEED=7 SWEEP_CASES=500 SWEEP_JSON=/tmp/s.json
SWEEP_JSON ?= bench/sweep.json
SWEEP_SEED ?= 1
SWEEP_CASES ?=
SWEEP_ARGS ?=

.PHONY: bench-sweep

$(BUILD)/bench/sweep: bench/sweep.c $(BUILD)/libbcgen.a runtime/bcgen.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O2 -Wno-format-truncation -Iruntime -o $@ $< $(BUILD)/libbcgen.a $(LIBS)

bench-sweep: all $(BUILD)/bench/sweep
	SWEEP_JSON=$(SWEEP_JSON) SWEEP_SEED=$(SWEEP_SEED) SWEEP_CASES=$(SWEEP_CASES) \
	  $(BUILD)/bench/sweep $(SWEEP_ARGS)

# `make bench-stream`: streaming against plain stores over output sizes,
# dtypes and in/out ratios, the sweep's way and make bench's
# (bench/stream_rule.c; the data behind BCG_STREAM_AUTO, gen/compile.c).
#   make bench-stream STREAM_SIZES="8 16 32"    output sizes in MiB
STREAM_SIZES ?=

.PHONY: bench-stream

$(BUILD)/bench/stream_rule: bench/stream_rule.c $(BUILD)/libbcgen.a runtime/bcgen.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O2 -Iruntime -o $@ $< $(BUILD)/libbcgen.a $(LIBS)

bench-stream: all $(BUILD)/bench/stream_rule
	sh bench/stream_rule.sh $(BUILD)/bench/stream_rule $(STREAM_SIZES)

# `make bench-program`: a program of several outputs fused into one kernel
# against the same program statement by statement and against NumPy
# (forward + gradient over f32[4096,4096]; bench/program.py, in one process,
# interleaved, best of PROGRAM_REPEAT).
PROGRAM_REPEAT ?= 15
PROGRAM_ARGS ?=

.PHONY: bench-program
bench-program: all
	BUILD=$(BUILD) $(PYTHON) bench/program.py --lib $(BUILD)/libbcgen.so \
	  --repeat $(PROGRAM_REPEAT) $(PROGRAM_ARGS)
