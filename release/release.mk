# release/release.mk: the release artifacts (included by the Makefile after
# PGXS).  release/README.md says how a release is cut.
#
#   make release-check  the versions of the release agree (release/versions.sh)
#   make dist           every file of DIST_FILES, in dist/, after release-check
#   make deb            the Debian source and binary packages, in dist/debian/
#                       (release/deb.sh; Debian's build tools: make deps)
#
# To add an artifact: append its path to DIST_FILES and write the rule that
# makes it (DIST_NAME is sandbox_store-<version of META.json>).  Every file
# of DIST_FILES is remade on each make dist, from the tree as it is.

.PHONY: dist deb release-check

DIST_VERSION := $(shell perl -MJSON::PP -e 'local $$/; print decode_json(<STDIN>)->{version}' <META.json 2>/dev/null)
DIST_NAME = $(EXTENSION)-$(DIST_VERSION)

# The PGXN distribution: the tracked files under sandbox_store-<version>/.
DIST_FILES = dist/$(DIST_NAME).zip

dist: $(DIST_FILES)

$(DIST_FILES): release-check

release-check:
	release/versions.sh

dist/$(DIST_NAME).zip:
	release/archive.sh $@ $(DIST_NAME)

deb: release-check
	release/deb.sh dist/debian
