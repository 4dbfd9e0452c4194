/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c -- where the library's messages go: the host's function
 * (wc_set_log), else stderr.
 *
 * The host may free what its function uses once wc_set_log() returned, so
 * that call waits for the calls of the previous function still running in
 * other threads.  Calls are counted per setting (two counters: settings
 * alternate between them, and wc_set_log calls are serialised, so a counter
 * is reused only once it drained).  The function itself runs with no lock
 * held: it may call into the library, which may log again -- and may even
 * call wc_set_log, which then does not wait for its own call.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"

#define WC_LOG_MAX 1024

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t log_drained = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static wc_log_fn log_fn; /* NULL: stderr */
static void *log_arg;
static unsigned log_gen;         /* settings so far; the parity picks a counter */
static unsigned log_active[2];   /* calls running, per parity of their setting */
static __thread unsigned mine[2];  /* of those, this thread's (nested calls) */

static void to_stderr(int level, const char *msg)
{
	/* DEBUG lines are for a host that asked for them, by its function. */
	if (level >= WC_LOG_DEBUG)
		return;
	fprintf(stderr, "libwcache: %s\n", msg);
}

void wc_log(int level, const char *fmt, ...)
{
	char msg[WC_LOG_MAX];
	wc_log_fn fn;
	void *arg;
	unsigned par;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	arg = log_arg;
	par = log_gen & 1u;
	log_active[par]++;
	pthread_mutex_unlock(&log_lock);
	mine[par]++;
	if (fn)
		fn(arg, level, msg);
	else
		to_stderr(level, msg);
	mine[par]--;
	pthread_mutex_lock(&log_lock);
	if (--log_active[par] == 0)
		pthread_cond_broadcast(&log_drained);
	pthread_mutex_unlock(&log_lock);
}

void wc_set_log(wc_log_fn fn, void *arg)
{
	unsigned old;

	pthread_mutex_lock(&set_lock);
	pthread_mutex_lock(&log_lock);
	old = log_gen & 1u;
	log_fn = fn;
	log_arg = arg;
	log_gen++;
	/* The previous setting's calls, but those this thread is inside of
	 * (they cannot end before this returns). */
	while (log_active[old] > mine[old])
		pthread_cond_wait(&log_drained, &log_lock);
	pthread_mutex_unlock(&log_lock);
	pthread_mutex_unlock(&set_lock);
}
