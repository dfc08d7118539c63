# shellcheck shell=bash
# test/scripts/suites.sh: the one list of the test suites and of the runs
# that include each (sourced after lib.sh, never run).  run-tests.sh,
# version-suites.sh and matrix.sh take their suites from here, in this order.
#
#   sb_suite NAME RUNS COMMAND [ARG...]
#
# COMMAND runs from the top of the tree (a copy of it, as root).  RUNS is a
# comma-separated list of:
#
#   root            run-tests.sh: make test's run on the server of PG_CONFIG
#                   (Debian's 15), against a throwaway cluster
#                   (with-cluster.sh), the SQL edition's suites through
#                   with-sql-edition.sh on clusters of their own
#   version         version-suites.sh: the matrix's run on each version,
#                   against a throwaway cluster of that version
#   version-citus   version-suites.sh where matrix.sh installed a Citus into
#                   that version (SB_CITUS; build-citus.sh: 14.0.1 on 18)
#   sql-edition@MAJORS  matrix.sh, after version-suites.sh: the SQL edition
#                   through pg_tle (PG_CONFIG: a copy of the version's
#                   server with pg_tle, build-pg_tle.sh)
#   upgrade@MAJORS  matrix.sh, last: as postgres, with SB_OLD_BINDIR (the
#                   server of PG_CONFIG) and SB_NEW_BINDIR (the version's),
#                   and PG_CONFIG=the version's pg_config added to COMMAND
#
# MAJORS: MAJOR[+MAJOR...]; MAJOR- is that version and every later one.
#
#   sb_suites "RUN..." [MAJOR]   sets sb_plan to the indexes of the suites
#                           of those runs (space-separated) on MAJOR, in
#                           order (with SB_SUITES set, a space-separated list
#                           of names: only those)
#   sb_suite_cmd I          suite I's COMMAND, as the array sb_cmd
#   sb_suite_line I [ARG...]   prints "NAME: COMMAND ARG..." (each word
#                           quoted as bash would need it): the dry run's line
#   sb_run_suites [OPTION...]   the one loop of run-tests.sh and
#                           version-suites.sh: runs the suites of sb_plan in
#                           order, from the current directory, goes on past a
#                           failing one and returns 1 if any failed.  It
#                           prints (printf formats; a line each; none unless
#                           given): --start FMT (NAME COMMAND) before a suite,
#                           --ok FMT or --failed FMT (NAME SECONDS) after it,
#                           a failed one's regression.diffs next (and with
#                           --keep-tap-logs, its tmp_check/log copied to
#                           log_of_failed_NAME), at the end --failures FMT
#                           (the names failed) if any failed, --totals FMT
#                           (PASSED FAILED).  SB_DRY_RUN set: it prints each
#                           suite's sb_suite_line and runs nothing.
#
# test/suites.plan is what the three scripts print with SB_DRY_RUN=1 (make
# suites-plan writes it, make lint compares).

: "${sb_top:?suites.sh: source lib.sh first}"
sb_suite_names=() sb_suite_runs=() sb_suite_count=0

sb_suite() {
  local i=$sb_suite_count
  sb_suite_names[i]=$1 sb_suite_runs[i]=$2
  shift 2
  declare -ga "sb_suite_cmd_$i"
  local -n sb_dst="sb_suite_cmd_$i"
  # shellcheck disable=SC2034  # sb_dst names sb_suite_cmd_I (a nameref)
  sb_dst=("$@")
  sb_suite_count=$((i + 1))
}

# True if RUNS (of a suite) includes RUN on MAJOR.
sb_suite_in() {
  local runs=$1 run=$2 major=${3:-} token majors m
  local IFS=,
  for token in $runs; do
    case $token in
    "$run") return 0 ;;
    "$run@"*)
      majors=${token#*@}
      IFS=+
      for m in $majors; do
        case $m in
        *-) [ -n "$major" ] && [ "$major" -ge "${m%-}" ] && return 0 ;;
        *) [ "$major" = "$m" ] && return 0 ;;
        esac
      done
      IFS=,
      ;;
    esac
  done
  return 1
}

sb_suites() {
  local i run in
  sb_plan=()
  for ((i = 0; i < sb_suite_count; i++)); do
    in=
    for run in $1; do
      sb_suite_in "${sb_suite_runs[i]}" "$run" "${2:-}" && in=1
    done
    [ -n "$in" ] || continue
    if [ -n "${SB_SUITES:-}" ] && [[ " $SB_SUITES " != *" ${sb_suite_names[i]} "* ]]; then
      continue
    fi
    sb_plan+=("$i")
  done
}

sb_suite_cmd() {
  local -n sb_src="sb_suite_cmd_$1"
  sb_cmd=("${sb_src[@]}")
}
sb_suite_line() {
  local i=$1
  shift
  sb_suite_cmd "$i"
  printf '%s:' "${sb_suite_names[i]}"
  printf ' %q' "${sb_cmd[@]}" "$@"
  echo
}

# shellcheck disable=SC2059  # the formats are the caller's, for sb_run_suites
sb_run_suites() {
  local start='' ok='' failed='' failures='' totals='' keep_logs='' i name t f passed=0 names=()
  while [ $# -gt 0 ]; do
    case $1 in
    --start) start=$2; shift 2 ;;
    --ok) ok=$2; shift 2 ;;
    --failed) failed=$2; shift 2 ;;
    --failures) failures=$2; shift 2 ;;
    --totals) totals=$2; shift 2 ;;
    --keep-tap-logs) keep_logs=1; shift ;;
    *) fail "sb_run_suites: no option $1" ;;
    esac
  done
  if [ -n "${SB_DRY_RUN:-}" ]; then
    for i in "${sb_plan[@]}"; do sb_suite_line "$i"; done
    return 0
  fi
  for i in "${sb_plan[@]}"; do
    name=${sb_suite_names[i]}
    sb_suite_cmd "$i"
    [ -z "$start" ] || printf "$start\n" "$name" "${sb_cmd[*]}"
    t=$SECONDS
    if "${sb_cmd[@]}"; then
      passed=$((passed + 1))
      [ -z "$ok" ] || printf "$ok\n" "$name" $((SECONDS - t))
      continue
    fi
    names+=("$name")
    [ -z "$failed" ] || printf "$failed\n" "$name" $((SECONDS - t))
    for f in regression.diffs output_iso/regression.diffs; do
      if [ -s "$f" ]; then echo "--- $f"; cat "$f"; fi
    done
    # Later TAP suites start by removing tmp_check: keep this one's logs.
    if [ -n "$keep_logs" ] && [ -d tmp_check/log ] && cp -r tmp_check/log "log_of_failed_$name"; then
      echo "--- TAP logs kept in $(pwd)/log_of_failed_$name"
    fi
  done
  [ ${#names[@]} -eq 0 ] || [ -z "$failures" ] || printf "$failures\n" "${names[*]}"
  [ -z "$totals" ] || printf "$totals\n" "$passed" ${#names[@]}
  [ ${#names[@]} -eq 0 ]
}

# The Perl TAP tests that need no package beyond the server: 005 needs
# pgbouncer and 008 sqlsmith (the root run has both).
sb_portable_tap=()
for sb_t in "$sb_top"/test/t/*.pl; do
  case $sb_t in
  */005_pgbouncer.pl | */008_fuzz.pl) ;;
  *) sb_portable_tap+=("${sb_t#"$sb_top"/}") ;;
  esac
done
unset sb_t

# The suites.  root: the C edition's, then (as a non-superuser, each on a
# cluster of its own: with-sql-edition.sh; test/sql-edition.mk says what each
# leaves out) the SQL edition's through pg_tle and with the plain script,
# then the slow ones.
sb_make=(make --no-print-directory)
sb_sql=test/scripts/with-sql-edition.sh
sb_suite lint             root                  "${sb_make[@]}" lint
sb_suite regress          root,version          "${sb_make[@]}" regresscheck
sb_suite isolation        root,version          "${sb_make[@]}" isolationcheck
sb_suite pgtap            root,version          "${sb_make[@]}" pgtapcheck
sb_suite stress           root                  "${sb_make[@]}" stresscheck
sb_suite citus            root                  "${sb_make[@]}" citus-check
sb_suite tap              root                  "${sb_make[@]}" tapcheck
sb_suite tap              version               "${sb_make[@]}" tapcheck PROVE_TESTS="${sb_portable_tap[*]}"
sb_suite citus            version-citus         "${sb_make[@]}" citus-check
sb_suite client           root                  "${sb_make[@]}" clientcheck
sb_suite deb              root                  test/scripts/release-test.sh deb
sb_suite pgxn             root                  test/scripts/release-test.sh pgxn
sb_suite pg_tle-regress   root                  "$sb_sql" pg_tle "${sb_make[@]}" regresscheck
sb_suite pg_tle-isolation root                  "$sb_sql" pg_tle "${sb_make[@]}" isolationcheck
sb_suite pg_tle-pgtap     root                  "$sb_sql" pg_tle "${sb_make[@]}" pgtapcheck
sb_suite pg_tle-tap       root                  "$sb_sql" pg_tle "${sb_make[@]}" tapcheck
# (The client's browser line tests the route and the page, not the edition: the C edition's run has it.)
sb_suite pg_tle-client    root                  env SB_TS_LINES="0.42 0.58" "$sb_sql" pg_tle "${sb_make[@]}" clientcheck
sb_suite plain-regress    root                  "$sb_sql" plain "${sb_make[@]}" regresscheck
sb_suite plain-isolation  root                  "$sb_sql" plain "${sb_make[@]}" isolationcheck
sb_suite plain-pgtap      root                  "$sb_sql" plain "${sb_make[@]}" pgtapcheck
# (One cluster for the three; make -k: the others run even if one failed.)
sb_suite pg_tle           sql-edition@18        "$sb_sql" pg_tle make -k --no-print-directory regresscheck isolationcheck tapcheck
sb_suite pg_upgrade       upgrade@18-           "${sb_make[@]}" tapcheck PROVE_TESTS=test/upgrade/pg_upgrade.pl
sb_suite bench-smoke      root                  env BENCH_SMOKE=1 bench/run.sh
sb_suite growth           root                  "${sb_make[@]}" growthcheck
sb_suite memory           root                  "${sb_make[@]}" memcheck
unset sb_make sb_sql
