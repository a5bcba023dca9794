# bcgen.mk - regenerate bcgen firmware pairs from spec files in a plain
# Makefile (GNU make).  Installed by `make install` as
# PREFIX/share/bcgen/bcgen.mk.
#
#   BCGEN_SPECS  = kernels.bcg motor/filters.bcg   # spec files (docs/spec.md)
#   BCGEN_OUTDIR = gen                             # where the pairs go (default: bcgen-out)
#   include /opt/bcgen/share/bcgen/bcgen.mk
#
#   CFLAGS += -I$(BCGEN_OUTDIR)
#   firmware.elf: main.o $(BCGEN_OBJECTS)
#   main.o: $(BCGEN_HEADERS)
#
# For each SPEC the rule `$(BCGEN_OUTDIR)/NAME.c $(BCGEN_OUTDIR)/NAME.h:
# SPEC` runs `bcgen aot --spec SPEC -o $(BCGEN_OUTDIR)/NAME.c` (NAME: the
# spec's file name without .bcg), again when the spec or the bcgen program
# changes.  The pair is byte-identical for the same spec on any machine.
#   BCGEN_SOURCES, BCGEN_HEADERS   the generated .c and .h files
#   BCGEN_OBJECTS                  the .c files as .o (in BCGEN_OUTDIR)
#   BCGEN                          the generator (default: the bin/bcgen
#                                  installed next to this file, else bcgen)
#   bcgen-clean                    removes what the rules generated

BCGEN_MK_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
# including this file does not change the including Makefile's default goal
BCGEN_SAVED_GOAL := $(.DEFAULT_GOAL)
BCGEN ?= $(firstword $(wildcard $(abspath $(BCGEN_MK_DIR)../../bin/bcgen)) bcgen)
BCGEN_OUTDIR ?= bcgen-out

BCGEN_NAMES   := $(basename $(notdir $(BCGEN_SPECS)))
BCGEN_SOURCES := $(patsubst %,$(BCGEN_OUTDIR)/%.c,$(BCGEN_NAMES))
BCGEN_HEADERS := $(patsubst %,$(BCGEN_OUTDIR)/%.h,$(BCGEN_NAMES))
BCGEN_OBJECTS := $(BCGEN_SOURCES:.c=.o)
# the generator itself, when it is a file: a new bcgen regenerates the pairs
BCGEN_PROGRAM := $(wildcard $(BCGEN))

# one rule writes both files (whole or not at all); the .h follows the .c
# (no grouped targets: they need GNU make 4.3)
define bcgen_rule
$(BCGEN_OUTDIR)/$(basename $(notdir $(1))).c: $(1) $(BCGEN_PROGRAM)
	@mkdir -p $(BCGEN_OUTDIR)
	$(BCGEN) aot --spec $(1) -o $(BCGEN_OUTDIR)/$(basename $(notdir $(1))).c
$(BCGEN_OUTDIR)/$(basename $(notdir $(1))).h: $(BCGEN_OUTDIR)/$(basename $(notdir $(1))).c ;
endef
$(foreach spec,$(BCGEN_SPECS),$(eval $(call bcgen_rule,$(spec))))

.PHONY: bcgen-clean
bcgen-clean:
	rm -f $(BCGEN_SOURCES) $(BCGEN_HEADERS) $(BCGEN_OBJECTS)

.DEFAULT_GOAL := $(BCGEN_SAVED_GOAL)
