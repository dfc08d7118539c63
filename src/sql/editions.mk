# src/sql/editions.mk: the install scripts put together from src/sql/parts
# (included by the Makefile).  The C edition's sandbox_store--VERSION.sql is
# built with the library; the SQL edition's two forms are release files in
# dist/: sandbox_store-VERSION.sql (the plain script, psql -f) and
# sandbox_store-VERSION-pg_tle.sql (the pg_tle registration).

# The SQL edition's files build with no pg_config (a managed database's user
# has no server development files): then PGXS, which sets srcdir, is not
# included, and the sources are in the current directory.
EDITION_SRCDIR = $(or $(srcdir),.)
EDITION_SOURCES = $(EDITION_SRCDIR)/src/sql/build.sh $(wildcard $(EDITION_SRCDIR)/src/sql/parts/*/*.sql) \
	$(wildcard $(EDITION_SRCDIR)/src/sql/parts/*/*/*.sql) \
	$(wildcard $(EDITION_SRCDIR)/src/sql/sql-edition/*.sql.in $(EDITION_SRCDIR)/src/sql/released/sql-edition/*.sql) \
	$(EDITION_SRCDIR)/$(EXTENSION).control \
	$(EDITION_SRCDIR)/src/sandbox_store.h
# The SQL edition's update scripts, src/sql/sql-edition/sandbox_store--FROM--TO.sql.in
# (a released version's kept as built in src/sql/released/sql-edition/, .sql): the pg_tle registration
# carries them; for the plain script each is a dist file of its own,
# dist/sandbox_store--FROM--TO.sql.
SQL_EDITION_UPDATES = $(patsubst %.sql.in,dist/%.sql,$(notdir $(wildcard $(EDITION_SRCDIR)/src/sql/sql-edition/$(EXTENSION)--*--*.sql.in))) \
	$(addprefix dist/,$(notdir $(wildcard $(EDITION_SRCDIR)/src/sql/released/sql-edition/$(EXTENSION)--*--*.sql)))
SQL_EDITION = dist/$(EXTENSION)-$(EXT_VERSION).sql dist/$(EXTENSION)-$(EXT_VERSION)-pg_tle.sql $(SQL_EDITION_UPDATES)

.PHONY: sql-edition dist

src/sql/$(EXTENSION)--$(EXT_VERSION).sql: $(EDITION_SOURCES)
	$(EDITION_SRCDIR)/src/sql/build.sh c $(EXT_VERSION) > $@.tmp && mv $@.tmp $@

src/sql/%.sql: src/sql/%.sql.in $(EDITION_SOURCES)
	$(EDITION_SRCDIR)/src/sql/build.sh expand $< $(EXT_VERSION) > $@.tmp && mv $@.tmp $@

dist/$(EXTENSION)-$(EXT_VERSION).sql: $(EDITION_SOURCES)
	@mkdir -p dist
	$(EDITION_SRCDIR)/src/sql/build.sh plain $(EXT_VERSION) > $@.tmp && mv $@.tmp $@

dist/$(EXTENSION)-$(EXT_VERSION)-pg_tle.sql: $(EDITION_SOURCES)
	@mkdir -p dist
	$(EDITION_SRCDIR)/src/sql/build.sh pg_tle $(EXT_VERSION) > $@.tmp && mv $@.tmp $@

dist/$(EXTENSION)--%.sql: $(EDITION_SRCDIR)/src/sql/sql-edition/$(EXTENSION)--%.sql.in $(EDITION_SOURCES)
	@mkdir -p dist
	v='$*'; $(EDITION_SRCDIR)/src/sql/build.sh plain-update $< $${v%%--*} $${v#*--} > $@.tmp && mv $@.tmp $@

# (a released version's update, kept as built)
dist/$(EXTENSION)--%.sql: $(EDITION_SRCDIR)/src/sql/released/sql-edition/$(EXTENSION)--%.sql $(EDITION_SOURCES)
	@mkdir -p dist
	v='$*'; $(EDITION_SRCDIR)/src/sql/build.sh plain-update $< $${v%%--*} $${v#*--} > $@.tmp && mv $@.tmp $@

# The SQL edition's files (also part of make dist).
sql-edition: $(SQL_EDITION)

dist: sql-edition
