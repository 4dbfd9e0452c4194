/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multiconn.c -- two NBD connections to the wcache plugin writing the same
 * blocks; a flush on one of them must make both durable.
 *
 *   multiconn write SOCKET SEED    write, flush on connection 0 only, print a
 *                                  line and wait, connections open, to be killed
 *   multiconn verify SOCKET SEED   read back, count wrong sectors, exit 1 if any
 *
 * Region A (8 MiB): the two connections write alternate 512-byte sectors of
 * every 4 KiB block at the same time, 16 requests in flight each, so the
 * plugin's read-modify-write of one block races another connection's and its
 * own connection's.  A lost update leaves a sector of zeroes or stale data.
 * Region B (2 MiB): connection 0 writes whole blocks, and once all have
 * completed connection 1 overwrites them; B must hold connection 1's data.
 * Then only connection 0 flushes.  The test script kills nbdkit with SIGKILL
 * right after, restarts it and runs `verify`.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#define SECTOR 512u
#define REGION_A (8u << 20)
#define REGION_B (2u << 20)
#define WINDOW 16

static uint64_t seed;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Every sector names its offset and writer, so a misplaced sector is as
 * visible as a lost one. */
static void fill(unsigned char *buf, uint64_t offset, size_t len, uint64_t tag)
{
	for (size_t s = 0; s < len; s += SECTOR) {
		uint64_t *w = (uint64_t *)(buf + s);

		for (size_t i = 0; i < SECTOR / 8; i++)
			w[i] = mix(seed ^ (tag << 56) ^ ((offset + s) << 4) ^ i);
	}
}

static unsigned char *expect_a, *expect_b, *first_b;

struct writer {
	struct nbd_handle *h;
	int parity;     /* sectors s with s % 2 == parity */
	int errors;
};

static int done_cb(void *user_data, int *error)
{
	struct writer *w = user_data;

	if (*error)
		w->errors++;
	return 1; /* retire the command */
}

static int wait_window(struct nbd_handle *h, unsigned max)
{
	while (nbd_aio_in_flight(h) > (int)max)
		if (nbd_poll(h, -1) < 0)
			return -1;
	return 0;
}

static void *write_a(void *arg)
{
	struct writer *w = arg;
	uint64_t nsec = REGION_A / SECTOR;

	/* A stride through the region so that both connections are inside the
	 * same blocks at the same moment rather than one chasing the other. */
	for (uint64_t i = 0; i < nsec / 2; i++) {
		uint64_t s = (i * 7919 % (nsec / 2)) * 2 + (uint64_t)w->parity;
		nbd_completion_callback cb = { .callback = done_cb, .user_data = w };

		if (wait_window(w->h, WINDOW - 1) < 0 ||
		    nbd_aio_pwrite(w->h, expect_a + s * SECTOR, SECTOR, s * SECTOR, cb, 0) < 0) {
			fprintf(stderr, "write A: %s\n", nbd_get_error());
			w->errors++;
			return NULL;
		}
	}
	if (wait_window(w->h, 0) < 0) {
		fprintf(stderr, "write A: %s\n", nbd_get_error());
		w->errors++;
	}
	return NULL;
}

static struct nbd_handle *connect_to(const char *sock)
{
	struct nbd_handle *h = nbd_create();

	if (!h || nbd_connect_unix(h, sock) < 0) {
		fprintf(stderr, "connect %s: %s\n", sock, nbd_get_error());
		exit(2);
	}
	return h;
}

int main(int argc, char **argv)
{
	struct nbd_handle *h[2];
	struct writer w[2];
	pthread_t t[2];
	int errors = 0;

	if (argc != 4 || (strcmp(argv[1], "write") && strcmp(argv[1], "verify"))) {
		fprintf(stderr, "usage: %s write|verify SOCKET SEED\n", argv[0]);
		return 2;
	}
	seed = strtoull(argv[3], NULL, 0);
	expect_a = malloc(REGION_A);
	expect_b = malloc(REGION_B);
	first_b = malloc(REGION_B);
	if (!expect_a || !expect_b || !first_b)
		return 2;
	for (uint64_t s = 0; s < REGION_A / SECTOR; s++)
		fill(expect_a + s * SECTOR, s * SECTOR, SECTOR, 1 + (s & 1));
	fill(first_b, REGION_A, REGION_B, 3);
	fill(expect_b, REGION_A, REGION_B, 4);

	if (!strcmp(argv[1], "verify")) {
		unsigned char *got = malloc(REGION_A + REGION_B);
		uint64_t bad = 0;

		h[0] = connect_to(argv[2]);
		if (!got || nbd_pread(h[0], got, REGION_A + REGION_B, 0, 0) < 0) {
			fprintf(stderr, "read: %s\n", nbd_get_error());
			return 2;
		}
		for (uint64_t off = 0; off < REGION_A + REGION_B; off += SECTOR) {
			const unsigned char *want =
				off < REGION_A ? expect_a + off : expect_b + (off - REGION_A);

			if (memcmp(got + off, want, SECTOR)) {
				if (bad < 5)
					fprintf(stderr, "sector at %" PRIu64 " differs\n", off);
				bad++;
			}
		}
		printf("verified %u sectors, %" PRIu64 " wrong\n",
		       (REGION_A + REGION_B) / SECTOR, bad);
		nbd_close(h[0]);
		return bad ? 1 : 0;
	}

	for (int i = 0; i < 2; i++) {
		h[i] = connect_to(argv[2]);
		if (nbd_can_multi_conn(h[i]) != 1) {
			fprintf(stderr, "connection %d: the server does not offer multi-conn\n", i);
			return 1;
		}
		w[i] = (struct writer){ .h = h[i], .parity = i };
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, write_a, &w[i]);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		errors += w[i].errors;
	}
	if (nbd_pwrite(h[0], first_b, REGION_B, REGION_A, 0) < 0 ||
	    nbd_pwrite(h[1], expect_b, REGION_B, REGION_A, 0) < 0) {
		fprintf(stderr, "write B: %s\n", nbd_get_error());
		errors++;
	}
	/* The point of the test: connection 1 never flushes. */
	if (nbd_flush(h[0], 0) < 0) {
		fprintf(stderr, "flush: %s\n", nbd_get_error());
		errors++;
	}
	if (errors) {
		fprintf(stderr, "%d failed requests\n", errors);
		return 1;
	}
	printf("wrote %u + %u bytes on 2 connections, flushed on connection 0\n", REGION_A,
	       REGION_B);
	/* Keep both connections open until the script has killed the server:
	 * a disconnect must not be what makes the data durable. */
	fflush(stdout);
	for (;;)
		pause();
}
