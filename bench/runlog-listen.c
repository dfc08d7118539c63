/*
 * bench/runlog-listen.c: a reader's listener for bench/runlog.sh's watched
 * workloads: one connection that LISTENs on sandbox_store_run_log and takes
 * every notification as it comes (a listener that does not would let the
 * server's notification queue fill), until SIGTERM; then prints how many it
 * took.
 *
 *   runlog-listen CONNINFO
 *
 * It prints "listening" once the LISTEN is in effect.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>

#include <libpq-fe.h>

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
	(void) sig;
	stop = 1;
}

int
main(int argc, char **argv)
{
	PGconn *conn;
	PGresult *res;
	PGnotify *n;
	long count = 0;

	if (argc != 2)
	{
		fprintf(stderr, "usage: runlog-listen CONNINFO\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "runlog-listen: %s", PQerrorMessage(conn));
		return 1;
	}
	res = PQexec(conn, "LISTEN sandbox_store_run_log");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "runlog-listen: %s", PQerrorMessage(conn));
		return 1;
	}
	PQclear(res);
	printf("listening\n");
	fflush(stdout);
	while (!stop)
	{
		fd_set fds;
		struct timeval tv = {0, 100000};
		int sock = PQsocket(conn);

		FD_ZERO(&fds);
		FD_SET(sock, &fds);
		if (select(sock + 1, &fds, NULL, NULL, &tv) < 0)
			continue; /* a signal */
		if (!PQconsumeInput(conn))
		{
			fprintf(stderr, "runlog-listen: %s", PQerrorMessage(conn));
			return 1;
		}
		while ((n = PQnotifies(conn)) != NULL)
		{
			count++;
			PQfreemem(n);
		}
	}
	printf("%ld\n", count);
	PQfinish(conn);
	return 0;
}
