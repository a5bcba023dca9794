# mk/microkernels.mk - runtime/*.c: code of the library itself that kernels
# call at run time (the vectorised microkernels).  Compiled with -O3, and
# each function carries its own AVX-512 (x86-64-v4), AVX2 and baseline
# clones (target_clones in the source), so the library stays portable while
# using the host's vectors.  -ffp-contract=off: the v4 clone has FMA, and a
# contracted a * b + c would change bits between clones.
# -fno-trapping-math lets gcc if-convert (and so vectorise) the selects of
# the f32 polynomials; bcgen promises values, never floating-point exception
# flags, and no flag changes a value here (no -ffast-math, no contraction).

# The sanitizer trees (mk/safety.mk) set RUNTIME_OPT=-O1: clang's -O3 over
# the macro-expanded kernels took 470 s under ASan against 167 s at -O1
# (the longest step of make test's build); what ASan and UBSan check is the
# source, not the vectoriser.
RUNTIME_OPT ?= -O3
RUNTIME_SRC = $(wildcard runtime/*.c)
RUNTIME_OBJ = $(patsubst runtime/%.c,$(BUILD)/obj/runtime/%.o,$(RUNTIME_SRC))
LIB_OBJ += $(RUNTIME_OBJ)

# the runtime includes only runtime/*.h: generator changes do not rebuild it
$(BUILD)/obj/runtime/%.o: runtime/%.c runtime/bcgen.h runtime/runtime.h runtime/half.h $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(RUNTIME_OPT) -fno-math-errno -fno-trapping-math -ffp-contract=off -c $< -o $@
