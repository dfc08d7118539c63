/*
 * bench/runlog-wake.c: append-to-reader wake latency of a run log through
 * LISTEN/NOTIFY (bench/runlog.sh, phase runlog of make bench).
 *
 *   runlog-wake CONNINFO RUN_ID ITERATIONS WARMUP CHUNKS OUT.tsv
 *
 * Two connections, as a client's writer and its shared listener: the
 * listener LISTENs on sandbox_store_run_log and calls run_log_watch (from
 * then on the log's writes notify); then ITERATIONS times (after WARMUP
 * untimed ones) the writer sends run_log_append(RUN_ID, a batch of
 * CHUNKS chunks of about 200 bytes of JSON) in autocommit, and the reader
 * waits for the notification with RUN_ID as its payload, then reads the new
 * entries (run_log_read(RUN_ID, after => the last seq it read)) and checks
 * it got exactly that batch.  Each iteration records, in milliseconds from
 * the moment the append was sent:
 *
 *   notify  the notification reached the reader (the wake)
 *   read    the reader has the new entries (the wake plus one read)
 *   ack     the writer has the append's result (its commit acknowledged)
 *
 * One line per timed iteration goes to OUT.tsv; the summary (median, p99,
 * max of each) to stdout as "name<TAB>p50<TAB>p99<TAB>max".  Exit status
 * non-zero on any error or a batch read wrongly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <libpq-fe.h>

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void
die(const char *what, PGconn *conn)
{
	fprintf(stderr, "runlog-wake: %s: %s\n", what, conn ? PQerrorMessage(conn) : strerror(errno));
	exit(1);
}

static PGconn *
connect_to(const char *conninfo)
{
	PGconn	   *conn = PQconnectdb(conninfo);

	if (PQstatus(conn) != CONNECTION_OK)
		die("connect", conn);
	return conn;
}

static void
exec_ok(PGconn *conn, const char *sql)
{
	PGresult   *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		die(sql, conn);
	PQclear(res);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* The nearest-rank percentile p (0..1) of n sorted values. */
static double
percentile(const double *v, int n, double p)
{
	int			i = (int) (n * p + 0.999999);

	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

static void
summary(const char *name, double *v, int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	printf("%s\t%.3f\t%.3f\t%.3f\n", name, percentile(v, n, 0.5), percentile(v, n, 0.99), v[n - 1]);
}

int
main(int argc, char **argv)
{
	const char *run_id;
	int			iterations,
				warmup,
				chunks;
	PGconn	   *writer,
			   *reader;
	FILE	   *out;
	double	   *notify_ms,
			   *read_ms,
			   *ack_ms;
	long long	last_seq = 0;
	char	   *batch;
	size_t		batch_size;

	if (argc != 7)
	{
		fprintf(stderr, "usage: runlog-wake CONNINFO RUN_ID ITERATIONS WARMUP CHUNKS OUT.tsv\n");
		return 2;
	}
	run_id = argv[2];
	iterations = atoi(argv[3]);
	warmup = atoi(argv[4]);
	chunks = atoi(argv[5]);
	if (iterations < 1 || warmup < 0 || chunks < 1)
	{
		fprintf(stderr, "runlog-wake: ITERATIONS and CHUNKS must be >= 1, WARMUP >= 0\n");
		return 2;
	}
	out = fopen(argv[6], "w");
	if (out == NULL)
		die(argv[6], NULL);
	fprintf(out, "iteration\tnotify_ms\tread_ms\tack_ms\n");

	writer = connect_to(argv[1]);
	reader = connect_to(argv[1]);
	exec_ok(reader, "LISTEN sandbox_store_run_log");
	{
		PGresult   *res = PQprepare(writer, "append",
									"SELECT pg_catalog.array_length(sandbox_store.run_log_append($1, $2::jsonb), 1)", 2, NULL);

		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die("prepare append", writer);
		PQclear(res);
		/* The reader marks the log watched (after LISTEN): writes notify from then on. */
		{
			const char *wparams[1] = {run_id};

			res = PQexecParams(reader, "SELECT last_seq FROM sandbox_store.run_log_watch($1)", 1, NULL, wparams, NULL,
							   NULL, 0);
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				die("run_log_watch", reader);
			PQclear(res);
		}
		res = PQprepare(reader, "read",
						"SELECT seq FROM sandbox_store.run_log_read($1, $2::int8)", 2, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die("prepare read", reader);
		PQclear(res);
	}

	/* A batch of CHUNKS chunks of about 200 bytes (a TEXT_MESSAGE_CONTENT event each). */
	batch_size = 64 + (size_t) chunks * 256;
	batch = malloc(batch_size);
	{
		size_t		len = 0;

		len += snprintf(batch + len, batch_size - len, "[");
		for (int i = 0; i < chunks; i++)
			len += snprintf(batch + len, batch_size - len,
							"%s{\"type\": \"TEXT_MESSAGE_CONTENT\", \"messageId\": \"msg-0001\", "
							"\"timestamp\": 1767225600000, \"delta\": \"The quick brown fox jumps over the lazy dog; "
							"the five boxing wizards jump quickly. %04d Pack my box with five dozen liquor jugs.\"}",
							i ? ", " : "", i);
		snprintf(batch + len, batch_size - len, "]");
	}

	notify_ms = calloc(iterations, sizeof(double));
	read_ms = calloc(iterations, sizeof(double));
	ack_ms = calloc(iterations, sizeof(double));

	for (int it = -warmup; it < iterations; it++)
	{
		const char *aparams[2] = {run_id, batch};
		char		after[32];
		const char *rparams[2] = {run_id, after};
		double		t0,
					t_notify = -1,
					t_read,
					t_ack = -1;
		PGresult   *res;

		t0 = now_ms();
		if (!PQsendQueryPrepared(writer, "append", 2, aparams, NULL, NULL, 0))
			die("send append", writer);

		/* Wait for the wake, noting the writer's acknowledgement meanwhile. */
		while (t_notify < 0)
		{
			fd_set		fds;
			int			rfd = PQsocket(reader),
						wfd = PQsocket(writer);
			PGnotify   *n;

			FD_ZERO(&fds);
			FD_SET(rfd, &fds);
			if (t_ack < 0)
				FD_SET(wfd, &fds);
			if (select((rfd > wfd ? rfd : wfd) + 1, &fds, NULL, NULL, NULL) < 0 && errno != EINTR)
				die("select", NULL);
			if (FD_ISSET(rfd, &fds))
			{
				if (!PQconsumeInput(reader))
					die("reader input", reader);
				while ((n = PQnotifies(reader)) != NULL)
				{
					if (strcmp(n->relname, "sandbox_store_run_log") == 0 && strcmp(n->extra, run_id) == 0 &&
						t_notify < 0)
						t_notify = now_ms();
					PQfreemem(n);
				}
			}
			if (t_ack < 0 && FD_ISSET(wfd, &fds))
			{
				if (!PQconsumeInput(writer))
					die("writer input", writer);
				if (!PQisBusy(writer))
					t_ack = now_ms();
			}
		}

		/* The reader reads what is new. */
		snprintf(after, sizeof(after), "%lld", last_seq);
		res = PQexecPrepared(reader, "read", 2, rparams, NULL, NULL, 0);
		t_read = now_ms();
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			die("read", reader);
		if (PQntuples(res) != chunks || atoll(PQgetvalue(res, 0, 0)) != last_seq + 1)
		{
			fprintf(stderr, "runlog-wake: iteration %d: read %d entries from seq %s, expected %d from %lld\n", it,
					PQntuples(res), PQntuples(res) ? PQgetvalue(res, 0, 0) : "-", chunks, last_seq + 1);
			return 1;
		}
		last_seq += chunks;
		PQclear(res);

		/* The writer's result. */
		while ((res = PQgetResult(writer)) != NULL)
		{
			if (t_ack < 0)
				t_ack = now_ms();
			if (PQresultStatus(res) != PGRES_TUPLES_OK || atoi(PQgetvalue(res, 0, 0)) != chunks)
				die("append", writer);
			PQclear(res);
		}

		if (it >= 0)
		{
			notify_ms[it] = t_notify - t0;
			read_ms[it] = t_read - t0;
			ack_ms[it] = t_ack - t0;
			fprintf(out, "%d\t%.4f\t%.4f\t%.4f\n", it, notify_ms[it], read_ms[it], ack_ms[it]);
		}
	}
	fclose(out);
	summary("notify", notify_ms, iterations);
	summary("read", read_ms, iterations);
	summary("ack", ack_ms, iterations);
	PQfinish(writer);
	PQfinish(reader);
	return 0;
}
