/*
 * bench/delay-proxy.c: a TCP proxy on 127.0.0.1 that holds every chunk it
 * relays for a set time in each direction, so a round trip through it costs
 * twice that time more than loopback.  Network latency for the benchmarks on
 * a kernel without netem (bench/rtt.sh builds and runs it).
 *
 *   delay-proxy LISTEN_PORT UPSTREAM ONE_WAY_US
 *
 * UPSTREAM is host:port (IPv4) or the path of a Unix socket.  Order within a
 * connection is kept; a side that closes gets its queued data delivered
 * first.  One thread, ppoll() with nanosecond timeouts and a timer slack of
 * 1 ns, so a chunk leaves within microseconds of its due time.  On SIGTERM
 * or SIGINT it prints the CPU time it used, so a benchmark can show what
 * the proxy itself cost.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 4096
#define CHUNK   65536

struct chunk
{
	struct chunk *next;
	uint64_t due; /* ns, CLOCK_MONOTONIC */
	size_t len, off;
	char data[];
};

/* One end of a relayed connection: its socket, and what waits to go to it. */
struct end
{
	int peer;          /* the other end's fd, -1 if unused */
	int done;          /* this end closed: read no more from it */
	int eof;           /* the other end closed: close both once this queue drains */
	struct chunk *head, *tail;
};

static struct end ends[MAX_FDS];
static uint64_t delay_ns;
static const char *upstream;
static volatile sig_atomic_t stop;
static int maxfd; /* highest fd in use */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void
on_signal(int sig)
{
	(void) sig;
	stop = 1;
}

static int
connect_upstream(void)
{
	int fd;

	if (upstream[0] == '/')
	{
		struct sockaddr_un a = {.sun_family = AF_UNIX};

		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", upstream);
		if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0)
			goto fail;
	}
	else
	{
		struct sockaddr_in a = {.sin_family = AF_INET};
		char host[256];
		const char *colon = strrchr(upstream, ':');
		int one = 1;

		if (colon == NULL || colon - upstream >= (long) sizeof(host))
			return -1;
		memcpy(host, upstream, colon - upstream);
		host[colon - upstream] = '\0';
		a.sin_port = htons((uint16_t) atoi(colon + 1));
		if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
			return -1;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0)
			goto fail;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void
free_queue(struct end *e)
{
	while (e->head)
	{
		struct chunk *c = e->head;

		e->head = c->next;
		free(c);
	}
	e->tail = NULL;
}

static void
close_pair(int fd)
{
	int peer = ends[fd].peer;

	free_queue(&ends[fd]);
	ends[fd].peer = -1;
	ends[fd].done = ends[fd].eof = 0;
	close(fd);
	if (peer >= 0)
	{
		free_queue(&ends[peer]);
		ends[peer].peer = -1;
		ends[peer].done = ends[peer].eof = 0;
		close(peer);
	}
}

/* Write what is due to fd.  Returns -1 if the pair was closed. */
static int
flush_due(int fd, uint64_t now)
{
	struct end *e = &ends[fd];

	while (e->head && e->head->due <= now)
	{
		struct chunk *c = e->head;
		ssize_t w = write(fd, c->data + c->off, c->len - c->off);

		if (w < 0)
		{
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			close_pair(fd);
			return -1;
		}
		c->off += (size_t) w;
		if (c->off < c->len)
			return 0;
		e->head = c->next;
		if (e->head == NULL)
			e->tail = NULL;
		free(c);
	}
	if (e->head == NULL && e->eof)
	{
		close_pair(fd);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct pollfd *pfd = calloc(MAX_FDS + 1, sizeof(struct pollfd));
	int lfd, one = 1;
	struct rusage ru;
	sigset_t blocked, unblocked;

	if (argc != 4)
	{
		fprintf(stderr, "usage: delay-proxy LISTEN_PORT UPSTREAM ONE_WAY_US\n");
		return 2;
	}
	upstream = argv[2];
	delay_ns = (uint64_t) strtoull(argv[3], NULL, 10) * 1000u;
	for (int i = 0; i < MAX_FDS; i++)
		ends[i].peer = -1;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	/* SIGTERM and SIGINT arrive only inside ppoll, so none is lost before it */
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	sigprocmask(SIG_BLOCK, &blocked, &unblocked);

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_port = htons((uint16_t) atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(lfd, 512) < 0)
	{
		perror("delay-proxy: listen");
		return 1;
	}
	fcntl(lfd, F_SETFL, O_NONBLOCK);

	while (!stop)
	{
		uint64_t now = now_ns(), next = UINT64_MAX;
		int n = 0;
		struct timespec timeout, *tp = NULL;

		pfd[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int fd = 0; fd <= maxfd; fd++)
		{
			if (ends[fd].peer < 0)
				continue;
			pfd[n++] = (struct pollfd){.fd = fd, .events = ends[fd].done ? 0 : POLLIN};
			if (ends[fd].head)
			{
				if (ends[fd].head->due <= now)
					pfd[n - 1].events |= POLLOUT; /* due but blocked */
				else if (ends[fd].head->due < next)
					next = ends[fd].head->due;
			}
		}
		if (next != UINT64_MAX)
		{
			uint64_t wait = next - now;

			timeout.tv_sec = (time_t) (wait / 1000000000u);
			timeout.tv_nsec = (long) (wait % 1000000000u);
			tp = &timeout;
		}
		if (ppoll(pfd, (nfds_t) n, tp, &unblocked) < 0 && errno != EINTR)
		{
			perror("delay-proxy: ppoll");
			return 1;
		}
		for (int i = 0; i < n; i++)
		{
			int fd = pfd[i].fd;

			if (pfd[i].revents == 0)
				continue;
			if (fd == lfd)
			{
				int c;

				while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0)
				{
					int u = connect_upstream();

					if (u < 0 || c >= MAX_FDS || u >= MAX_FDS)
					{
						close(c);
						if (u >= 0)
							close(u);
						continue;
					}
					fcntl(u, F_SETFL, O_NONBLOCK);
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					ends[c].peer = u;
					ends[u].peer = c;
					if (c > maxfd)
						maxfd = c;
					if (u > maxfd)
						maxfd = u;
				}
				continue;
			}
			if (ends[fd].peer < 0)
				continue; /* closed with its peer in this round */
			if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) && !ends[fd].done)
			{
				static char buf[CHUNK];
				ssize_t r = read(fd, buf, sizeof(buf));
				int to = ends[fd].peer;
				struct chunk *c;

				if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
					continue;
				if (r <= 0)
				{
					/* deliver what is queued for the peer, then close both */
					ends[fd].done = 1;
					ends[to].eof = 1;
					if (ends[to].head == NULL)
						close_pair(fd);
					continue;
				}
				c = malloc(sizeof(struct chunk) + (size_t) r);
				if (c == NULL)
				{
					perror("delay-proxy: malloc");
					return 1;
				}
				memcpy(c->data, buf, (size_t) r);
				c->next = NULL;
				c->len = (size_t) r;
				c->off = 0;
				c->due = now_ns() + delay_ns;
				if (ends[to].tail)
					ends[to].tail->next = c;
				else
					ends[to].head = c;
				ends[to].tail = c;
			}
		}
		now = now_ns();
		for (int fd = 0; fd <= maxfd; fd++)
			if (ends[fd].peer >= 0 && ends[fd].head)
				flush_due(fd, now);
	}
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "delay-proxy: %.2f s user, %.2f s system\n",
			ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
