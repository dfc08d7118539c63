# bench/bench.mk: the benchmarks (included by the Makefile; BENCHMARKS.md
# reports them and says how long each takes).

.PHONY: bench bench-rtt bench-citus

# Every workload beside plain SQL, PL/pgSQL and the SQL edition, on a
# throwaway cluster.
bench: installed
	test/scripts/with-cluster.sh bench/run.sh

# The headline workloads behind a simulated network round trip (also part
# of make bench).
bench-rtt: installed
	test/scripts/with-cluster.sh bench/rtt.sh

# ensure and get through a citus coordinator and a worker vs one server,
# Citus 13.2.2 on 15 beside Citus 14.0.1 on 18 (bench/citus.sh).
bench-citus: installed
	bench/citus.sh
