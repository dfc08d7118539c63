# bench/bench.mk: the benchmarks (included by the Makefile; BENCHMARKS.md
# reports them and says how long each takes).

.PHONY: bench bench-rtt bench-redis bench-citus bench-checkpoints bench-runlog bench-capacity bench-browser

# Every workload beside plain SQL, PL/pgSQL and the SQL edition, on a
# throwaway cluster.
bench: installed
	test/scripts/with-cluster.sh bench/run.sh

# The headline workloads behind a simulated network round trip (also part
# of make bench).
bench-rtt: installed
	test/scripts/with-cluster.sh bench/rtt.sh

# "Why not Redis?": sandbox_store beside a Redis lock and record through the
# delay proxy, then the semantics side by side (also part of make bench).
# The Redis client, bench/redis/redis-bench.c, is built by the script into
# its temp directory (-Wall -Wextra -Werror).
bench-redis: installed
	test/scripts/with-cluster.sh bench/redis.sh

# ensure and get through a citus coordinator and a worker vs one server,
# Citus 13.2.2 on 15 beside Citus 14.0.1 on 18 (bench/citus.sh).
bench-citus: installed
	bench/citus.sh

# The checkpoint store beside a bare table: append, get, list, the writer
# lease cycle (bench/checkpoints.sh).
bench-checkpoints: installed
	test/scripts/with-cluster.sh bench/checkpoints.sh

# The run log (1.5) beside a bare table, and its append-to-reader wake
# latency through LISTEN/NOTIFY (bench/runlog.sh; also part of make bench).
bench-runlog: installed
	test/scripts/with-cluster.sh bench/runlog.sh

# Live streams: how many runs, each a producer appending every 50 ms and a
# reader tailing it through the client, one server carries (bench/capacity.sh;
# also part of make bench; needs the TypeScript client built).
bench-capacity: installed
	test/scripts/with-cluster.sh bench/capacity.sh

# A streamed answer in headless chromium after a fault: the chat-resume
# example through kill -9, SIGSTOP, a cut and a chain, beside the same page
# on resumable-stream with Redis (bench/browser.sh; also part of make bench).
bench-browser: installed
	test/scripts/with-cluster.sh bench/browser.sh
