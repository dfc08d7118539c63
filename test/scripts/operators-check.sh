#!/bin/sh
# operators-check.sh [FILE...]: the operator rule of src/sql/parts/README.md
# ("Conventions", Operators), checked on every part (make lint): in a
# PL/pgSQL expression (IF, ELSIF, an assignment :=, RETURN; up to its THEN,
# LOOP or ;) operators are written plain, never OPERATOR(pg_catalog.x).  A
# subquery in such an expression is an SQL statement, which spells them
# out: the check reads an expression only up to its first SELECT (and not
# inside string literals, such as the DDL text distribute() runs).  Prints
# every line that breaks the rule and fails when there is one.
set -eu

if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046  # file names of the tree, without spaces
	set -- $(find "$(dirname "$0")/../../src/sql/parts" -name '*.sql' | LC_ALL=C sort)
fi
awk '
	FNR == 1 { expr = 0 }
	/^[[:space:]]*--/ { next }
	{
		line = $0
		sub(/--.*/, "", line)
		if (!expr) {
			if (line ~ /^[[:space:]]*(IF|ELSIF|RETURN)([[:space:]]|\(|$)/ && line !~ /^[[:space:]]*RETURN[[:space:]]+QUERY/ \
			    || line ~ /:=/) {
				expr = 1; sub_seen = 0
				if (line ~ /:=/) sub(/^.*:=/, "", line)
			} else
				next
		}
		text = line
		gsub(/\047[^\047]*\047/, "\047\047", text)
		if (!sub_seen && match(text, /SELECT/)) { text = substr(text, 1, RSTART - 1); sub_seen = 1 }
		if (!sub_seen && text ~ /OPERATOR\(pg_catalog\./) {
			printf "%s:%d: OPERATOR(pg_catalog.x) in a PL/pgSQL expression (write the operator plain): %s\n", FILENAME, FNR, $0
			bad++
		}
		if (line ~ /(THEN|LOOP|;)[[:space:]]*$/ || line ~ /[[:space:]]THEN[[:space:]]/) expr = 0
	}
	END { if (bad) { printf "operators-check: %d line(s) break the operator rule of src/sql/parts/README.md\n", bad; exit 1 } }
' "$@" >&2
