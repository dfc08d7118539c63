# shellcheck shell=bash
# bench/profile-lib.sh: what the callgrind profilers share (bench/profile.sh,
# profile-runlog.sh and profile-checkpoints.sh), sourced after
# test/scripts/lib.sh.  The method: a workload's statements run in a fresh
# single-user backend (postgres --single: autocommit, one statement a line)
# under valgrind --tool=callgrind, once with PROFILE_WARM calls and once
# with PROFILE_WARM + PROFILE_CALLS; the difference over PROFILE_CALLS is
# the steady-state cost of one call, without startup and warm-up.  Every
# run starts from the same copy of the cluster's data directory, so a
# workload that writes leaves nothing for the next one to prune.
#
#   prof_begin RESULTS CALLS WARM "$@"
#       out (PROFILE_OUT, default bench/out/RESULTS), calls and warm (from
#       PROFILE_CALLS and PROFILE_WARM, or the defaults given); as root,
#       re-runs the calling script as the postgres user on a copy of the
#       tree and copies its results back; then checks for valgrind and
#       starts a private cluster (jit off) in $dir, its environment
#       exported for psql
#   prof_sql_edition FILE
#       writes the SQL edition's plain script of this tree's version to FILE
#   prof_freeze
#       stops the cluster and keeps its data as the start of every run
#   prof_measure WORKLOAD DB
#       runs the caller's `prof_script WORKLOAD N` (which prints N calls'
#       input for the single-user backend) with N = warm and N = warm +
#       calls in database DB, sets prof_per to the instructions per call and
#       leaves callgrind's inclusive costs of the long run in
#       $out/WORKLOAD.annotate.txt
#   prof_table WIDTH WORKLOAD...
#       prof_measure of each workload (database bench_sql for a name that
#       starts with sql_, else bench), printed and written to
#       $out/summary.txt with its ratio to the first one

prof_begin() {
  local results=$1
  out=${PROFILE_OUT:-$sb_top/bench/out/$results}
  calls=${PROFILE_CALLS:-$2}
  warm=${PROFILE_WARM:-$3}
  shift 3
  if [ "$(id -u)" = 0 ]; then
    # The copy writes to its own bench/out/RESULTS; that comes back to $out.
    export PROFILE_SHOWN_OUT=$out
    unset PROFILE_OUT
    # shellcheck disable=SC2034 # (read by lib.sh's sb_as_postgres)
    sb_results_from=bench/out/$results sb_results_to=$out
    sb_as_postgres "$@"
  fi
  local tool
  for tool in valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (apt-get install valgrind)"
  done
  sb_use_pg
  mkdir -p "$out"
  sb_tempdir "sandbox_store_$results"
  # shellcheck disable=SC2154 # (sb_dir: set by lib.sh's sb_tempdir)
  dir=$sb_dir
  sb_cluster_init "$dir" "jit = off"
  sb_cluster_start "$dir"
  sb_cluster_env "$dir"
}

prof_sql_edition() {
  "$sb_top/src/sql/build.sh" plain "$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$sb_top/sandbox_store.control")" \
    >"$1"
}

prof_freeze() {
  sb_cluster_stop "$dir" fast
  mv "$dir/data" "$dir/data.orig"
}

prof_instructions() { # callgrind output file
  sed -n 's/^totals: \([0-9]*\).*/\1/p; s/^summary: \([0-9]*\).*/\1/p' "$1" | head -n 1
}

prof_run() { # workload db n outfile
  declare -F prof_script >/dev/null || fail "the profiler defines no prof_script (bench/profile-lib.sh)"
  prof_script "$1" "$3" >"$dir/script.sql" || fail "$1: its script failed"
  rm -rf "$dir/data"
  cp -a "$dir/data.orig" "$dir/data"
  # shellcheck disable=SC2154 # (sb_bindir: set by lib.sh's sb_use_pg)
  valgrind --tool=callgrind --callgrind-out-file="$4" \
    "$sb_bindir/postgres" --single -D "$dir/data" -c fsync=off -c jit=off "$2" \
    <"$dir/script.sql" >"$dir/single.out" 2>"$dir/valgrind.err" || {
    tail -n 20 "$dir/valgrind.err" "$dir/single.out" >&2
    fail "$1 failed"
  }
  if grep -q "ERROR:" "$dir/single.out" "$dir/valgrind.err"; then
    grep -h -m 3 "ERROR:" "$dir/single.out" "$dir/valgrind.err" >&2
    fail "$1: the statement failed"
  fi
}

prof_measure() { # workload db; sets prof_per
  prof_run "$1" "$2" "$warm" "$out/$1.short.cg"
  prof_run "$1" "$2" "$((warm + calls))" "$out/$1.cg"
  prof_per=$((($(prof_instructions "$out/$1.cg") - $(prof_instructions "$out/$1.short.cg")) / calls))
  callgrind_annotate --inclusive=yes --threshold=99 "$out/$1.cg" 2>/dev/null | head -n 80 \
    >"$out/$1.annotate.txt" || true
  rm -f "$out/$1.short.cg"
}

prof_table() { # width workload...
  local width=$1 wl db first=""
  shift
  say "$calls calls after $warm warm-up calls, instructions per call:"
  printf "%-${width}s %14s %8s\n" workload instructions "/ $1" >"$out/summary.txt"
  for wl in "$@"; do
    db=bench
    [ "${wl#sql_}" = "$wl" ] || db=bench_sql
    prof_measure "$wl" "$db"
    [ -n "$first" ] || first=$prof_per
    printf "%-${width}s %14s %8s\n" "$wl" "$prof_per" \
      "$(awk -v a="$prof_per" -v b="$first" 'BEGIN { printf "%.3f", a / b }')" | tee -a "$out/summary.txt"
  done
  say "per-function costs: ${PROFILE_SHOWN_OUT:-$out}/<workload>.annotate.txt (callgrind_annotate --inclusive=yes)"
}
