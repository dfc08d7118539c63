# test/test.mk: the two commands of a fresh machine and the test suites
# (included by the Makefile).  Each suite runs against the server in
# PGHOST/PGPORT (a superuser); test/scripts/with-cluster.sh runs any of them
# against a throwaway cluster instead.

export PG_CONFIG

# The SQL edition's runs leave some tests out.
include test/sql-edition.mk

.PHONY: deps installed demo test matrix lint suites-plan regresscheck isolationcheck pgtapcheck \
	stresscheck tapcheck citus-check clientcheck memcheck growthcheck

# Debian packages the build, the tests and the demo need (as root).
deps:
	test/scripts/install-deps.sh

# Built warning-free (-Werror) and installed into the server of PG_CONFIG.
installed: deps
	$(MAKE) all WERROR=1
	$(MAKE) install

# The demo, on a throwaway cluster.
demo: installed
	test/scripts/with-cluster.sh test/scripts/demo.sh

# The suites of test/scripts/suites.sh (test/suites.plan lists each run's,
# in order): on Debian's PostgreSQL 15 every suite (test/scripts/run-tests.sh:
# the citus suite on Citus 13.2.2; the SQL edition's through pg_tle and with
# the plain script, on copies of the server), then the matrix of PostgreSQL
# 16-19 (test/scripts/matrix.sh; 15, the server of the suites before, is
# left out: SB_MATRIX_SKIP_BASE): on each version pg_regress, isolation,
# pgTAP and the Perl TAP tests but 005 and 008; on 18 also the citus suite
# with Citus 14.0.1 and the SQL edition's pg_regress, isolation and Perl TAP
# tests through pg_tle; on 18 and 19 pg_upgrade and dump/restore from a 15
# cluster.  Fails if either failed.  The matrix's servers (and Citus) are
# built in the background at the lowest priority while the suites on 15 run
# (test/scripts/build-matrix.sh; nothing to do once they are in the cache);
# a version of the matrix whose build is still under way waits for it.
test: installed
	test/scripts/build-citus.sh >/dev/null
	test/scripts/build-pg_tle.sh >/dev/null
	rc=0; nice -n 19 test/scripts/build-matrix.sh $(MATRIX_VERSIONS) & built=$$!; \
	test/scripts/with-cluster.sh test/scripts/run-tests.sh || rc=1; \
	SB_MATRIX_SKIP_BASE=1 test/scripts/matrix.sh $(MATRIX_VERSIONS) || rc=1; wait $$built; exit $$rc

# Each missing server is built once into a cache outside the clone.
MATRIX_VERSIONS = 15 16 17 18 19
matrix: deps
	test/scripts/matrix.sh $(MATRIX_VERSIONS)

# Every shell script of the tree (the sourced ones too).
SHELL_SCRIPTS = $(sort $(wildcard test/scripts/*.sh test/stress/*.sh test/memory/*.sh bench/*.sh \
	release/*.sh src/sql/build.sh clients/typescript/test/run.sh .ci/run debian/tests/installcheck))

# The suites each run plans (test/scripts/suites.sh), as the scripts print
# them with SB_DRY_RUN=1: make lint checks that test/suites.plan still says
# so; after a change to the suites, make suites-plan rewrites it (and the
# diff is what the change does to the runs).
SUITES_PLAN = { echo "\# The suites each run of make test executes, in order (make suites-plan;"; \
	echo "\# test/scripts/suites.sh).  run-tests.sh:"; \
	SB_DRY_RUN=1 SB_SUITES= test/scripts/run-tests.sh; \
	echo "\# matrix.sh (version-suites.sh, then its own):"; \
	SB_DRY_RUN=1 SB_SUITES= SB_MATRIX_SKIP_BASE=1 test/scripts/matrix.sh; }

# The C code's format and cppcheck, shellcheck on every shell script, the
# operator rule of the SQL parts (src/sql/parts/README.md), and the suites
# planned.
lint:
	clang-format --dry-run --Werror src/*.c src/*.h
	cppcheck --enable=warning,style,performance,portability --error-exitcode=1 -q --max-configs=1 \
		--suppress=missingIncludeSystem --suppress=missingInclude --suppress=toomanyconfigs \
		"--suppress=*:$(includedir_server)/*" -I src -I $(includedir_server) src/
	shellcheck -x $(SHELL_SCRIPTS)
	test/scripts/operators-check.sh
	test/scripts/release-check-test.sh
	@$(SUITES_PLAN) | diff -u test/suites.plan - || \
		{ echo "lint: the suites planned differ from test/suites.plan (make suites-plan rewrites it)" >&2; exit 1; }

suites-plan:
	$(SUITES_PLAN) >test/suites.plan

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

# The Perl TAP tests install the SQL edition's plain script too
# (014_editions), from dist/: make builds it first (it needs no server).
# PGXS's installcheck runs them as well, unless TAP_TESTS is emptied.
tapcheck: sql-edition
	$(prove_installcheck)
ifneq ($(TAP_TESTS),)
installcheck: sql-edition
endif

# On a citus coordinator and two workers of the server of PG_CONFIG (Citus
# built into it by build-citus.sh: 13.2.2 on 15, 14.0.1 on 18).
citus-check:
	$(MAKE) --no-print-directory tapcheck PROVE_TESTS="test/citus/citus.pl test/citus/checkpoints.pl test/citus/tails.pl test/citus/client-locks.pl"

clientcheck:
	clients/typescript/test/run.sh

# AddressSanitizer + UBSan build on a private server of its own.
memcheck:
	test/memory/run.sh

# 1,000,000 calls in one backend: no memory growth.
growthcheck:
	test/memory/growth.sh
