# sandbox_store: the PGXS build.  The test suites and the two commands of a
# fresh machine (make demo, make test) are in test/test.mk, the benchmarks in
# bench/bench.mk, the release artifacts (make dist) in release/release.mk;
# CONTRIBUTING.md says what each target does.

EXTENSION = sandbox_store
MODULE_big = sandbox_store
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
EXT_VERSION := $(shell sed -n "s/^default_version = '\\(.*\\)'$$/\\1/p" $(EXTENSION).control)
# The install script of the current version, and the update scripts with an
# .sql.in, are put together from src/sql/parts by src/sql/build.sh
# (src/sql/editions.mk); the released versions' scripts are kept as written,
# in src/sql/released.
DATA_built = src/sql/$(EXTENSION)--$(EXT_VERSION).sql \
	$(patsubst %.sql.in,%.sql,$(wildcard src/sql/$(EXTENSION)--*--*.sql.in))
DATA = $(wildcard src/sql/released/$(EXTENSION)--*.sql)
PGFILEDESC = "sandbox_store - durable sandbox instance store and per-key lock"

# The library's version is the control file's (src/sandbox_store.h, SB_LIBRARY_VERSION).
PG_CPPFLAGS = -I$(srcdir)/src -DSB_LIBRARY_VERSION='"$(EXT_VERSION)"'
PG_CFLAGS = -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers \
	$(if $(filter 1,$(WERROR)),-Werror)

# pg_regress: sql/NAME.sql against expected/NAME.out; isolation:
# test/specs/NAME.spec against test/expected/NAME.out; Perl TAP: test/t/*.pl.
REGRESS = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
ISOLATION = $(sort $(basename $(notdir $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

EXTRA_CLEAN = results regression.diffs regression.out output_iso tmp_check log dist

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(PGXS),)
include $(PGXS)
else
all install installcheck:
	@echo "$(PG_CONFIG) not found: install PostgreSQL's server development files, or set PG_CONFIG" >&2
	@exit 1
endif

# Every object includes the shared header (PGXS tracks no header dependencies).
$(OBJS): src/sandbox_store.h src/compat.h
src/catalog.o: $(EXTENSION).control

include src/sql/editions.mk
include test/test.mk
include bench/bench.mk
include release/release.mk
