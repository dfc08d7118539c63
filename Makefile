# sandbox_store: PGXS build, tests and demo.
#
#   make demo   install what is missing, build, install, play the demo
#   make test   install what is missing, build, install, run every suite,
#               then make matrix (PostgreSQL 15, 16, 17, 18 and 19)
#
# Both start a throwaway cluster of their own (test/scripts/with-cluster.sh).
# Single suites, against the cluster in PGHOST/PGPORT:
#   make regresscheck | isolationcheck | pgtapcheck | stresscheck | tapcheck | clientcheck
#   | growthcheck; make memcheck starts a private ASan server of its own

EXTENSION = sandbox_store
MODULE_big = sandbox_store
OBJS = src/sandbox_store.o src/validate.o src/catalog.o src/spi.o src/locks.o src/claims.o src/take.o src/store.o \
	src/ensure.o src/reap.o src/result.o src/direct.o
DATA = $(wildcard sql/$(EXTENSION)--*.sql)
PGFILEDESC = "sandbox_store - durable sandbox instance store and per-key lock"

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers

# Every test lives under test/ (sql/ holds only the install and upgrade
# scripts).  pg_regress: test/sql/<name>.sql against test/expected/<name>.out;
# each test starts from a fresh extension (test/sql/include/fresh.sql), so
# they do not depend on their order.
REGRESS = $(sort $(basename $(notdir $(wildcard test/sql/*.sql))))
REGRESS_OPTS = --inputdir=test
# pg_isolation_regress: test/specs/<name>.spec against test/expected/<name>.out.
ISOLATION = $(sort $(basename $(notdir $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test
# Perl TAP (PostgreSQL::Test::Cluster): clusters of their own.
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

EXTRA_CLEAN = results regression.diffs regression.out output_iso tmp_check log

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(PGXS),)
include $(PGXS)
else
all install installcheck:
	@echo "$(PG_CONFIG) not found: run 'make deps' (as root) or set PG_CONFIG" >&2
	@exit 1
endif

export PG_CONFIG

.PHONY: deps demo test matrix citus-check bench-citus lint regresscheck isolationcheck pgtapcheck stresscheck tapcheck clientcheck \
	memcheck growthcheck bench bench-rtt

deps:
	test/scripts/install-deps.sh

demo: deps
	$(MAKE) all
	$(MAKE) install
	test/scripts/with-cluster.sh test/scripts/demo.sh

# Every suite on Debian's 15, then make matrix; fails if either failed.
test: deps
	$(MAKE) all
	$(MAKE) install
	test/scripts/build-citus.sh
	rc=0; test/scripts/with-cluster.sh test/scripts/run-tests.sh || rc=1; \
	test/scripts/matrix.sh $(MATRIX_VERSIONS) || rc=1; exit $$rc

# PostgreSQL 15-19: build each missing server once (cache outside the clone),
# then per version the extension, pg_regress, isolation, pgTAP, Perl TAP, and
# pg_upgrade from 15 for 18 and 19 (test/scripts/matrix.sh).
MATRIX_VERSIONS = 15 16 17 18 19
matrix: deps
	test/scripts/matrix.sh $(MATRIX_VERSIONS)

regresscheck:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

isolationcheck:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) \
		--dbname=isolation_regression $(ISOLATION)

pgtapcheck:
	test/scripts/pgtap.sh

stresscheck:
	test/stress/run.sh
	test/stress/rr_upsert.sh

tapcheck:
	$(prove_installcheck)

# AddressSanitizer + UBSan build on a private server: regress, isolation,
# fuzz and growth with zero reports (test/memory/run.sh).
memcheck:
	test/memory/run.sh

# 1,000,000 calls in one backend: no memory growth (test/memory/growth.sh).
growthcheck:
	test/memory/growth.sh

# Benchmarks against plain SQL and PL/pgSQL (BENCHMARKS.md), about 23 min
# on 2 cores (measured: 22 min 45 s with deps, build and install).
bench: deps
	$(MAKE) all
	$(MAKE) install
	test/scripts/with-cluster.sh bench/run.sh

# sandbox_store on a real citus cluster (coordinator and two workers); needs
# citus in PostgreSQL 15 (test/scripts/build-citus.sh, run by make test).
citus-check:
	$(MAKE) --no-print-directory tapcheck PROVE_TESTS=test/citus/citus.pl

# The headline workloads behind a simulated network round trip (part of
# make bench; this runs it alone, about 5 min).
bench-rtt: deps
	$(MAKE) all
	$(MAKE) install
	test/scripts/with-cluster.sh bench/rtt.sh

# ensure and get through a citus coordinator and a worker vs one server.
bench-citus: deps
	$(MAKE) all
	$(MAKE) install
	bench/citus.sh

# The TypeScript client (clients/typescript): npm ci, tsc, node --test.
clientcheck:
	clients/typescript/test/run.sh

# Style and static checks on the C sources (clang-format, cppcheck).
lint:
	clang-format --dry-run --Werror src/*.c src/*.h
	cppcheck --enable=warning,style,performance,portability --error-exitcode=1 -q --max-configs=1 \
		--suppress=missingIncludeSystem --suppress=missingInclude --suppress=toomanyconfigs \
		"--suppress=*:$(includedir_server)/*" -I src -I $(includedir_server) src/
