#!/bin/sh
# bench/sqlprof/build.sh NAMES OUT: the SQL edition's plain script with the
# changes NAMES of bench/sqlprof/variants.py ("stock": none) applied to
# src/sql/parts/functions-sql.sql, for bench/profile.sh (PROFILE_EDITION=sql
# PROFILE_SQL_SCRIPT=OUT) or bench/run.sh (BENCH_SQL_SCRIPT=OUT).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$top/sandbox_store.control")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$top/src/sql" "$tmp/sql"
python3 "$top/bench/sqlprof/variants.py" "$1" "$top/src/sql/parts/functions-sql.sql" "$tmp/sql/parts/functions-sql.sql"
"$tmp/sql/build.sh" plain "$version" >"$2"
