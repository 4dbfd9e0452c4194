/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_replay.h -- the plain (non-libFuzzer) build of a fuzz harness: a
 * main() that runs every file of a corpus folder through the harness's
 * LLVMFuzzerTestOneInput, each in a child process, and prints TAP (make
 * check), or writes the harness's seed corpus.
 */
#ifndef WC_FUZZ_REPLAY_H
#define WC_FUZZ_REPLAY_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_harness {
	const char *corpus;                 /* under WC_TEST_SRCDIR */
	void (*setup)(void);                /* in the parent, before the children */
	int (*make_corpus)(const char *dir);
	const char *(*outcome)(void);       /* what the last input did, for TAP */
};

/*   PROG                     replay the harness's corpus (TAP)
 *   PROG DIR                 replay DIR
 *   PROG --make-corpus DIR   write the seeds into DIR */
int fuzz_replay_main(const struct fuzz_harness *h, int argc, char **argv);

#endif
