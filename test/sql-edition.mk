# test/sql-edition.mk: what the suites leave out for the SQL edition (the one
# without C), included by test/test.mk.  test/scripts/with-sql-edition.sh
# sets SB_EDITION (pg_tle or plain); the C edition's runs (SB_EDITION unset)
# run everything.  Each test here cannot apply to the SQL edition, or to the
# non-superuser that installs it, by nature:
#
# pg_regress
#   direct            the C library's setting sandbox_store.direct_reads and
#                     its two read paths
#   guard             the event trigger sandbox_store_guard: making one needs
#                     a superuser, so the SQL edition has none
#   upgrade           installs 1.0 and updates through every version: the SQL
#                     edition starts at 1.4
#   checkpoint_limit_role  sandbox_store.max_checkpoint_bytes as the C
#                     library's superuser setting: in the SQL edition any
#                     role may set it, as documented
# isolation
#   update-in-flight  ALTER EXTENSION UPDATE from 1.1 while calls wait (the
#                     SQL edition starts at 1.4)
#   drop-in-flight    (plain only) DROP and CREATE EXTENSION while a call
#                     waits: the plain script makes no extension
# Perl TAP: only the tests that install the edition SB_EDITION names
# (SandboxStoreTest's install_sandbox_store): fences, checkpoints and run
# logs across a crash; and the SQL edition's own: its update from 1.4 (017: through
# pg_tle only with pg_tle), a pooled session across updates (018: through
# pg_tle only with pg_tle), and for pg_tle the moves between editions (014)
# and the registration script's refusals (016).
# pgTAP and the TypeScript client's suite run whole.

ifneq ($(filter pg_tle plain,$(SB_EDITION)),)
SQL_EDITION_SKIP_REGRESS = direct guard upgrade checkpoint_limit_role
SQL_EDITION_SKIP_ISOLATION = update-in-flight checkpoint-update-in-flight $(if $(filter plain,$(SB_EDITION)),drop-in-flight)
REGRESS := $(filter-out $(SQL_EDITION_SKIP_REGRESS),$(REGRESS))
ISOLATION := $(filter-out $(SQL_EDITION_SKIP_ISOLATION),$(ISOLATION))
PROVE_TESTS = test/t/002_fence_crash.pl test/t/010_fence_flush.pl test/t/015_checkpoint_crash.pl \
  test/t/019_run_log_crash.pl \
  test/t/017_sql_edition_update.pl test/t/018_update_pooled.pl \
  $(if $(filter pg_tle,$(SB_EDITION)),test/t/014_editions.pl test/t/016_pg_tle_registration.pl)
endif

# Where the SQL edition's behaviour differs from the C edition's (the
# differences docs/reference.md lists under "Editions"), the expected output
# of a test is replaced by the SQL edition's: expected/sql-edition/NAME.out
# (pg_regress) and test/expected/sql-edition/NAME.out (isolation), and by a
# form's own, expected/$(SB_EDITION)/NAME.out, where the plain script and
# pg_tle differ too (the plain script makes no extension).  The suites then
# read their expected files from a copy with those laid over (pg_regress
# writes its results and regression.diffs there too: on 15 it prefers
# expected files under its output directory; 16 and later take them from
# --expecteddir).
ifneq ($(filter pg_tle plain,$(SB_EDITION)),)
EDITION_EXPECTED = $(CURDIR)/tmp_check/edition-expected
REGRESS_OPTS += --inputdir=$(EDITION_EXPECTED)/regress --outputdir=$(EDITION_EXPECTED)/regress \
	$(if $(filter 15,$(MAJORVERSION)),,--expecteddir=$(EDITION_EXPECTED)/regress)
ISOLATION_OPTS = --inputdir=$(EDITION_EXPECTED)/isolation
regresscheck isolationcheck: edition-expected
endif

.PHONY: edition-expected
edition-expected:
	rm -rf $(EDITION_EXPECTED)
	mkdir -p $(EDITION_EXPECTED)/regress/expected $(EDITION_EXPECTED)/isolation/expected
	ln -s $(CURDIR)/sql $(EDITION_EXPECTED)/regress/sql
	ln -s $(CURDIR)/src $(EDITION_EXPECTED)/regress/src
	ln -s $(CURDIR)/test/specs $(EDITION_EXPECTED)/isolation/specs
	cp expected/*.out $(EDITION_EXPECTED)/regress/expected/
	cp test/expected/*.out $(EDITION_EXPECTED)/isolation/expected/
	for d in sql-edition $(SB_EDITION); do \
	  for f in expected/$$d/*.out; do [ ! -e "$$f" ] || cp "$$f" $(EDITION_EXPECTED)/regress/expected/; done; \
	  for f in test/expected/$$d/*.out; do [ ! -e "$$f" ] || cp "$$f" $(EDITION_EXPECTED)/isolation/expected/; done; \
	done
