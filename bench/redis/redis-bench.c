/*
 * bench/redis/redis-bench.c: the Redis baseline of the benchmarks, done the
 * way a careful Redis user does it (bench/redis.sh builds and runs it; the
 * semantics script bench/redis-semantics.sh uses its hold and acquire modes).
 *
 *   redis-bench -s TARGET -m MODE [-c CLIENTS] [-T SECONDS] [-n ROWS]
 *               [-t TTL_MS] [-b BACKOFF_US] [-B BACKOFF_CAP_US] [-p PREFIX]
 *               [-k KEY]
 *
 * TARGET is the path of a Unix socket or HOST:PORT (the delay proxy).  One
 * thread and one blocking connection per client, like pgbench's one
 * connection per client.  A record is a hash rec:<key> with the columns of
 * sandbox_store.instances; a key's lock is the string lock:<key>.
 *
 * Modes (round trips per job in brackets):
 *   load        write ROWS records, keys as bench/setup.sql makes them
 *               (tenant-<k % 1000>/thread-<k>/sbx/e2b), pipelined
 *   resume      resume-or-create of a random existing key [4]: lock with
 *               SET lock:k token NX PX ttl (on a miss: back off and retry),
 *               HGETALL the record, stamp it (HSET latest_run_id,
 *               updated_at; a missing record is created instead), release
 *               with a compare-and-delete script (EVALSHA); -n 1 is one hot
 *               key for all clients
 *   resume_lua  the resume as one Lua script, no lock [1]: EVALSHA of
 *               "if the record exists, stamp it and return it" (atomic on
 *               the server; a create would still need the lock)
 *   create      a create cycle on a new key [4]: lock, HGETALL (nothing:
 *               without this read two clients could both create), HSET the
 *               whole record, release
 *   ping        PING [1], to measure the round trip through the proxy
 *   hold        take the lock of KEY with TTL_MS, print "held", then sleep
 *               until killed (a client that dies holding the lock)
 *   acquire     take the lock of KEY, backing off as resume does, and print
 *               how many milliseconds that took
 *
 * Backoff after a lock miss: attempt n sleeps a random time between half and
 * all of min(BACKOFF_CAP_US, BACKOFF_US * 2^n) ("equal jitter"; defaults 500
 * and 16000 us).  Client libraries wait longer: redis-py's Lock polls every
 * 100 ms, node-redlock retries after 200 ms plus up to 200 ms of jitter.
 *
 * Prints one line:
 *   jobs=N seconds=S tps=X lat_mean_ms=M p50_ms=P p99_ms=Q lock_misses=R
 *   lost_locks=L creates=C
 * lat_* are per job (first lock attempt to the release's reply, backoff
 * included); lock_misses counts SET NX attempts that found the lock taken;
 * lost_locks counts releases that found the lock no longer theirs (its TTL
 * ran out and someone else may have written meanwhile).  Exit status 1 on
 * any error reply or connection error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* KEYS[1] = lock, ARGV[1] = token: delete the lock only if it is ours. */
static const char *release_lua =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
	"else return 0 end";
/* KEYS[1] = record, ARGV = run id, time: stamp an existing record, return it. */
static const char *resume_lua =
	"if redis.call('exists', KEYS[1]) == 1 then "
	"redis.call('hset', KEYS[1], 'latest_run_id', ARGV[1], 'updated_at', ARGV[2]) "
	"return redis.call('hgetall', KEYS[1]) else return false end";

enum mode
{
	M_LOAD,
	M_RESUME,
	M_RESUME_LUA,
	M_CREATE,
	M_PING,
	M_HOLD,
	M_ACQUIRE
};

static const char *target;
static enum mode mode;
static int nclients = 1;
static double seconds = 5;
static long rows = 100000;
static long ttl_ms = 30000;
static long backoff_us = 500;
static long backoff_cap_us = 16000;
static const char *prefix = "new";
static const char *fixed_key = "k";
static char release_sha[64], resume_sha[64];
static uint64_t deadline_ns;
static pthread_barrier_t barrier;

struct client
{
	int id;
	pthread_t thread;
	redisContext *c;
	unsigned int seed;
	uint64_t *lat; /* ns per job */
	size_t njobs, cap;
	long misses, lost, creates;
	int failed;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static long long
epoch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
die(const char *msg)
{
	fprintf(stderr, "redis-bench: %s\n", msg);
	exit(1);
}

static redisContext *
connect_target(void)
{
	redisContext *c;

	if (target[0] == '/')
		c = redisConnectUnix(target);
	else
	{
		char host[256];
		const char *colon = strrchr(target, ':');

		if (colon == NULL || colon - target >= (long) sizeof(host))
			die("the target must be a socket path or HOST:PORT");
		memcpy(host, target, colon - target);
		host[colon - target] = '\0';
		c = redisConnect(host, atoi(colon + 1));
	}
	if (c == NULL || c->err)
	{
		fprintf(stderr, "redis-bench: could not connect to %s: %s\n", target,
				c ? c->errstr : "out of memory");
		exit(1);
	}
	return c;
}

/* A reply, or exit: connection errors and error replies end the run. */
static redisReply *
checked(redisContext *c, redisReply *r, const char *what)
{
	if (r == NULL)
	{
		fprintf(stderr, "redis-bench: %s: %s\n", what, c->errstr);
		exit(1);
	}
	if (r->type == REDIS_REPLY_ERROR)
	{
		fprintf(stderr, "redis-bench: %s: %s\n", what, r->str);
		exit(1);
	}
	return r;
}

static void
load_script(redisContext *c, const char *lua, char *sha)
{
	redisReply *r = checked(c, redisCommand(c, "SCRIPT LOAD %s", lua), "SCRIPT LOAD");

	if (r->type != REDIS_REPLY_STRING || r->len >= 64)
		die("SCRIPT LOAD: unexpected reply");
	memcpy(sha, r->str, r->len + 1);
	freeReplyObject(r);
}

static void
sleep_us(long us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* SET lock NX PX ttl until it is ours, backing off after each miss. */
static void
take_lock(struct client *cl, const char *lock, const char *token)
{
	for (int attempt = 0;; attempt++)
	{
		redisReply *r = checked(
			cl->c, redisCommand(cl->c, "SET %s %s NX PX %ld", lock, token, ttl_ms), "SET NX");
		int ok = r->type == REDIS_REPLY_STATUS;
		long d;

		freeReplyObject(r);
		if (ok)
			return;
		cl->misses++;
		d = backoff_us << (attempt < 20 ? attempt : 20);
		if (d > backoff_cap_us || d <= 0)
			d = backoff_cap_us;
		sleep_us(d / 2 + (long) (rand_r(&cl->seed) % (unsigned int) (d / 2 + 1)));
	}
}

static void
release_lock(struct client *cl, const char *lock, const char *token)
{
	redisReply *r =
		checked(cl->c, redisCommand(cl->c, "EVALSHA %s 1 %s %s", release_sha, lock, token),
				"EVALSHA release");

	if (r->type != REDIS_REPLY_INTEGER)
		die("release: unexpected reply");
	if (r->integer != 1)
		cl->lost++;
	freeReplyObject(r);
}

static void
write_record(redisContext *c, const char *rec, const char *key, const char *sbx, const char *thread,
			 const char *run, long long ms)
{
	redisReply *r = checked(c,
							redisCommand(c,
										 "HSET %s key %s provider e2b provider_sandbox_id %s "
										 "thread_id %s latest_run_id %s updated_at %lld",
										 rec, key, sbx, thread, run, ms),
							"HSET record");

	freeReplyObject(r);
}

/* One job of the mode. */
static void
one_job(struct client *cl, long seq)
{
	char key[200], rec[210], lock[210], token[64], run[32], sbx[48], thread[120];
	redisReply *r;

	snprintf(token, sizeof(token), "%d-%ld-%08x%08x", cl->id, seq, (unsigned int) rand_r(&cl->seed),
			 (unsigned int) rand_r(&cl->seed));
	snprintf(run, sizeof(run), "run-%d", rand_r(&cl->seed) % 999999999 + 1);
	if (mode == M_CREATE)
	{
		snprintf(key, sizeof(key), "%s-%d-%ld", prefix, cl->id, seq);
		snprintf(thread, sizeof(thread), "thread-%d-%ld", cl->id, seq);
	}
	else
	{
		long k = rows <= 1 ? 1
						   : 1 + (long) (((uint64_t) rand_r(&cl->seed) << 16 ^ rand_r(&cl->seed)) %
										 (uint64_t) rows);
		snprintf(key, sizeof(key), "tenant-%ld/thread-%ld/sbx/e2b", k % 1000, k);
		snprintf(thread, sizeof(thread), "tenant-%ld/thread-%ld", k % 1000, k);
	}
	snprintf(rec, sizeof(rec), "rec:%s", key);
	snprintf(lock, sizeof(lock), "lock:%s", key);
	snprintf(sbx, sizeof(sbx), "sbx-%d-%ld", cl->id, seq);

	if (mode == M_PING)
	{
		r = checked(cl->c, redisCommand(cl->c, "PING"), "PING");
		freeReplyObject(r);
		return;
	}
	if (mode == M_RESUME_LUA)
	{
		r = checked(
			cl->c, redisCommand(cl->c, "EVALSHA %s 1 %s %s %lld", resume_sha, rec, run, epoch_ms()),
			"EVALSHA resume");
		if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
			die("resume_lua: no record (load the records first)");
		freeReplyObject(r);
		return;
	}

	take_lock(cl, lock, token);
	r = checked(cl->c, redisCommand(cl->c, "HGETALL %s", rec), "HGETALL");
	if (r->type != REDIS_REPLY_ARRAY)
		die("HGETALL: unexpected reply");
	if (r->elements == 0)
	{
		/* create: the app creates the sandbox, then records it */
		write_record(cl->c, rec, key, sbx, thread, run, epoch_ms());
		cl->creates++;
	}
	else
	{
		redisReply *s = checked(
			cl->c,
			redisCommand(cl->c, "HSET %s latest_run_id %s updated_at %lld", rec, run, epoch_ms()),
			"HSET stamp");

		freeReplyObject(s);
	}
	freeReplyObject(r);
	release_lock(cl, lock, token);
}

static void *
client_main(void *arg)
{
	struct client *cl = arg;
	long seq = 0;

	pthread_barrier_wait(&barrier);
	while (now_ns() < deadline_ns)
	{
		uint64_t t0 = now_ns();

		one_job(cl, seq++);
		if (cl->njobs == cl->cap)
		{
			cl->cap = cl->cap ? cl->cap * 2 : 4096;
			cl->lat = realloc(cl->lat, cl->cap * sizeof(uint64_t));
			if (cl->lat == NULL)
				die("out of memory");
		}
		cl->lat[cl->njobs++] = now_ns() - t0;
	}
	return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static void
do_load(void)
{
	redisContext *c = connect_target();
	long pending = 0;

	for (long k = 1; k <= rows; k++)
	{
		char key[120], thread[100], sbx[40], run[32];
		redisReply *r;

		snprintf(key, sizeof(key), "tenant-%ld/thread-%ld/sbx/e2b", k % 1000, k);
		snprintf(thread, sizeof(thread), "tenant-%ld/thread-%ld", k % 1000, k);
		snprintf(sbx, sizeof(sbx), "sbx-%ld", k);
		snprintf(run, sizeof(run), "run-%ld", k);
		redisAppendCommand(c,
						   "HSET rec:%s key %s provider e2b provider_sandbox_id %s thread_id %s "
						   "latest_run_id %s updated_at %lld",
						   key, key, sbx, thread, run, epoch_ms() - (k % 86400) * 1000);
		if (++pending == 1000 || k == rows)
		{
			while (pending-- > 0)
			{
				if (redisGetReply(c, (void **) &r) != REDIS_OK)
					die(c->errstr);
				freeReplyObject(checked(c, r, "HSET load"));
			}
			pending = 0;
		}
	}
	printf("loaded=%ld\n", rows);
	redisFree(c);
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: redis-bench -s TARGET -m load|resume|resume_lua|create|ping|hold|acquire "
			"[-c CLIENTS] [-T SECONDS] [-n ROWS] [-t TTL_MS] [-b BACKOFF_US] "
			"[-B BACKOFF_CAP_US] [-p PREFIX] [-k KEY]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct client *cls;
	uint64_t start, end, *all, sum = 0;
	size_t total = 0;
	long misses = 0, lost = 0, creates = 0;
	int opt;

	while ((opt = getopt(argc, argv, "s:m:c:T:n:t:b:B:p:k:")) != -1)
	{
		switch (opt)
		{
			case 's':
				target = optarg;
				break;
			case 'm':
				if (strcmp(optarg, "load") == 0)
					mode = M_LOAD;
				else if (strcmp(optarg, "resume") == 0)
					mode = M_RESUME;
				else if (strcmp(optarg, "resume_lua") == 0)
					mode = M_RESUME_LUA;
				else if (strcmp(optarg, "create") == 0)
					mode = M_CREATE;
				else if (strcmp(optarg, "ping") == 0)
					mode = M_PING;
				else if (strcmp(optarg, "hold") == 0)
					mode = M_HOLD;
				else if (strcmp(optarg, "acquire") == 0)
					mode = M_ACQUIRE;
				else
					usage();
				break;
			case 'c':
				nclients = atoi(optarg);
				break;
			case 'T':
				seconds = atof(optarg);
				break;
			case 'n':
				rows = atol(optarg);
				break;
			case 't':
				ttl_ms = atol(optarg);
				break;
			case 'b':
				backoff_us = atol(optarg);
				break;
			case 'B':
				backoff_cap_us = atol(optarg);
				break;
			case 'p':
				prefix = optarg;
				break;
			case 'k':
				fixed_key = optarg;
				break;
			default:
				usage();
		}
	}
	if (target == NULL || nclients < 1 || seconds <= 0 || rows < 1 || ttl_ms < 1 ||
		backoff_us < 2 || backoff_cap_us < backoff_us)
		usage();

	if (mode == M_LOAD)
	{
		do_load();
		return 0;
	}
	if (mode == M_HOLD || mode == M_ACQUIRE)
	{
		struct client one = {.c = connect_target(), .seed = (unsigned int) getpid()};
		char lock[1100], token[64];
		uint64_t t0 = now_ns();

		snprintf(lock, sizeof(lock), "lock:%s", fixed_key);
		snprintf(token, sizeof(token), "%d-%08x", (int) getpid(), (unsigned int) rand_r(&one.seed));
		take_lock(&one, lock, token);
		if (mode == M_ACQUIRE)
		{
			printf("acquired_after_ms=%.1f misses=%ld\n", (now_ns() - t0) / 1e6, one.misses);
			return 0;
		}
		printf("held token=%s\n", token);
		fflush(stdout);
		for (;;)
			pause();
	}

	{
		redisContext *c = connect_target();

		load_script(c, release_lua, release_sha);
		load_script(c, resume_lua, resume_sha);
		redisFree(c);
	}
	cls = calloc((size_t) nclients, sizeof(struct client));
	if (cls == NULL)
		die("out of memory");
	pthread_barrier_init(&barrier, NULL, (unsigned int) nclients + 1);
	for (int i = 0; i < nclients; i++)
	{
		cls[i].id = i;
		cls[i].seed = (unsigned int) (now_ns() ^ (uint64_t) i * 2654435761u ^ (uint64_t) getpid());
		cls[i].c = connect_target();
	}
	deadline_ns = UINT64_MAX;
	for (int i = 0; i < nclients; i++)
		if (pthread_create(&cls[i].thread, NULL, client_main, &cls[i]) != 0)
			die("could not start a thread");
	start = now_ns();
	deadline_ns = start + (uint64_t) (seconds * 1e9);
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < nclients; i++)
	{
		pthread_join(cls[i].thread, NULL);
		total += cls[i].njobs;
		misses += cls[i].misses;
		lost += cls[i].lost;
		creates += cls[i].creates;
	}
	end = now_ns();
	if (total == 0)
		die("no job finished");
	all = malloc(total * sizeof(uint64_t));
	if (all == NULL)
		die("out of memory");
	total = 0;
	for (int i = 0; i < nclients; i++)
	{
		memcpy(all + total, cls[i].lat, cls[i].njobs * sizeof(uint64_t));
		total += cls[i].njobs;
		redisFree(cls[i].c);
	}
	qsort(all, total, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < total; i++)
		sum += all[i];
	{
		size_t i50 = (total * 50 + 99) / 100, i99 = (total * 99 + 99) / 100;

		i50 = i50 < 1 ? 1 : i50;
		i99 = i99 < 1 ? 1 : i99;
		printf("jobs=%zu seconds=%.3f tps=%.1f lat_mean_ms=%.4f p50_ms=%.4f p99_ms=%.4f "
			   "lock_misses=%ld lost_locks=%ld creates=%ld\n",
			   total, (end - start) / 1e9, total / ((end - start) / 1e9),
			   (double) sum / total / 1e6, all[i50 - 1] / 1e6, all[i99 - 1] / 1e6, misses, lost,
			   creates);
	}
	return 0;
}
