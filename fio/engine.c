/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * engine.c -- a fio external ioengine that does every I/O through libwcache.
 *
 *   ioengine=external:/path/libwcache-fio.so
 *   wc_cache=/dev/shm/wc.cache wc_origin=/dev/shm/wc.origin [wc_config=...]
 *   (or wc_origin=nbd+unix:///?socket=/run/disk.sock, any name wc_open takes)
 *   [wc_create=1 [wc_cache_size=1g]] [wc_stats=/path/stats.json]
 *
 * This file includes fio's private headers, so it is GPL-2.0 like fio
 * (see fio/README.md); libwcache itself stays BSD-3-Clause and is only linked.
 *
 * The device fio sees is the cache: one "file" per job whose size is
 * wc_size() (the origin's size).  fio's filename= is only a label; nothing
 * is opened under that name (FIO_DISKLESSIO).
 *
 * One process, one cache: every job (thread) naming the same wc_cache shares
 * one wc_cache handle, opened by the first job and closed by the last.  Jobs
 * forked as processes would each map the cache and corrupt it, so more than
 * one job on a cache requires thread=1.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"

#include <wcache.h>
#include <wctools.h>

/* fio checks ops->version at load time too, but a struct that changed under
 * the same source would crash instead: refuse to build against another fio. */
#if FIO_IOOPS_VERSION != 31
#error "libwcache-fio is written for fio's engine ABI version 31 (fio 3.33); update engine.c for this fio"
#endif

struct wcfio_options {
	void *pad;                   /* fio stores the td here; off1 must not be 0 */
	char *cache_path;
	char *origin_path;
	char *config;
	unsigned int create;
	unsigned long long cache_size;
	char *stats_path;
};

static struct fio_option options[] = {
	{
		.name = "wc_cache",
		.lname = "libwcache cache file",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct wcfio_options, cache_path),
		.help = "Cache (pmem) file or device, e.g. /dev/shm/wc.cache",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "wc_origin",
		.lname = "libwcache origin",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct wcfio_options, origin_path),
		.help = "Origin behind the cache: file, block device or NBD URI (nbd://HOST/EXPORT)",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "wc_config",
		.lname = "libwcache config",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct wcfio_options, config),
		.help = "wc_config_parse() string, e.g. high_watermark=60,autocommit_blocks=128",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "wc_create",
		.lname = "libwcache create",
		.type = FIO_OPT_BOOL,
		.off1 = offsetof(struct wcfio_options, create),
		.def = "0",
		.help = "Format the cache if it does not hold a valid cache (a valid one is never reformatted)",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "wc_cache_size",
		.lname = "libwcache cache size",
		.type = FIO_OPT_STR_VAL,
		.off1 = offsetof(struct wcfio_options, cache_size),
		.def = "0",
		.help = "With wc_create=1: create a missing or empty cache file of this size",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "wc_stats",
		.lname = "libwcache stats file",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct wcfio_options, stats_path),
		.help = "Write the cache's counters as JSON to this file when the last job closes it",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = NULL,
	},
};

/* One open cache, shared by every job of this process that names it. */
struct wcfio_shared {
	struct wcfio_shared *next;
	char *cache_path;
	char *origin_path;
	char *config;       /* as given (NULL = defaults), to refuse a mismatch */
	char *stats_path;
	wc_cache *cache;
	unsigned refs;
};

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wcfio_shared *shared_list;

/* Per job (td->io_ops_data). */
struct wcfio_job {
	struct wcfio_shared *shared;
};

struct ioengine_ops ioengine;

static bool same_str(const char *a, const char *b)
{
	if (!a || !*a)
		return !b || !*b;
	return b && !strcmp(a, b);
}

static int check_options(struct thread_data *td, const struct wcfio_options *o)
{
	if (!o->cache_path || !*o->cache_path) {
		log_err("wcache: job %s: wc_cache=PATH (the cache file) is required\n", td->o.name);
		return -EINVAL;
	}
	if (!o->origin_path || !*o->origin_path) {
		log_err("wcache: job %s: wc_origin=PATH|URI (the origin file, device or NBD URI) is required\n",
		        td->o.name);
		return -EINVAL;
	}
	return 0;
}

/*
 * Forked jobs cannot share a mapping: refuse a run in which this cache is
 * named by more than one job unless all of them are threads.
 */
static int check_process_sharing(struct thread_data *td, const struct wcfio_options *o)
{
	struct thread_data *other;
	int users = 0, forked = 0, i;

	for_each_td(other, i) {
		const struct wcfio_options *oo = other->eo;

		if (other->io_ops != &ioengine || !oo || !same_str(oo->cache_path, o->cache_path))
			continue;
		users++;
		if (!other->o.use_thread)
			forked++;
	}
	if (users > 1 && forked) {
		log_err("wcache: job %s: %d jobs use cache %s and %d of them are processes; "
		        "set thread=1 so they share one cache in one process\n",
		        td->o.name, users, o->cache_path, forked);
		return -EINVAL;
	}
	return 0;
}

/* wc_cache_size: give wc_create a cache file of the asked size. */
static int prepare_cache_file(const struct wcfio_options *o)
{
	struct stat st;
	int fd;

	if (!o->cache_size)
		return 0;
	if (stat(o->cache_path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_size > 0))
		return 0; /* a device, or a file someone sized: keep it */
	fd = open(o->cache_path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		log_err("wcache: create cache file %s: %s\n", o->cache_path, strerror(errno));
		return -errno;
	}
	if (ftruncate(fd, (off_t)o->cache_size) < 0) {
		int err = errno;

		log_err("wcache: size cache file %s to %llu bytes: %s\n", o->cache_path,
		        o->cache_size, strerror(err));
		close(fd);
		return -err;
	}
	close(fd);
	return 0;
}

/* Open (recover) the cache; with wc_create=1, format it when it does not
 * hold a valid cache.  wc_create refuses a valid cache, so an open that
 * failed for another reason (bad origin, I/O error) never loses data. */
static int open_cache(const struct wcfio_options *o, wc_cache **out)
{
	struct wc_config cfg;
	char open_msg[512];
	int ret;

	wc_config_init(&cfg);
	if (o->config && *o->config) {
		ret = wc_config_parse(&cfg, o->config);
		if (ret < 0) {
			log_err("wcache: wc_config=%s: %s\n", o->config, wc_errmsg());
			return ret;
		}
	}
	ret = wc_open(out, o->cache_path, o->origin_path, &cfg);
	if (ret == 0 || !o->create) {
		if (ret < 0)
			log_err("wcache: open cache %s (origin %s): %s\n", o->cache_path,
			        o->origin_path, wc_errmsg());
		return ret;
	}
	snprintf(open_msg, sizeof(open_msg), "%s", wc_errmsg());
	ret = prepare_cache_file(o);
	if (ret < 0)
		return ret;
	ret = wc_create(out, o->cache_path, o->origin_path, &cfg);
	if (ret < 0)
		log_err("wcache: cache %s (origin %s): open failed (%s) and create failed: %s\n",
		        o->cache_path, o->origin_path, open_msg, wc_errmsg());
	return ret;
}

static void free_shared(struct wcfio_shared *s)
{
	free(s->cache_path);
	free(s->origin_path);
	free(s->config);
	free(s->stats_path);
	free(s);
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* Take a reference on the cache this job names, opening it if needed. */
static int shared_get(struct thread_data *td, struct wcfio_shared **out)
{
	const struct wcfio_options *o = td->eo;
	struct wcfio_shared *s;
	int ret;

	ret = check_options(td, o);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&shared_lock);
	for (s = shared_list; s; s = s->next)
		if (!strcmp(s->cache_path, o->cache_path))
			break;
	if (s) {
		if (strcmp(s->origin_path, o->origin_path) || !same_str(s->config, o->config)) {
			log_err("wcache: job %s: cache %s is already open with origin %s and "
			        "wc_config '%s'; every job on one cache must name the same\n",
			        td->o.name, s->cache_path, s->origin_path, s->config ? s->config : "");
			ret = -EINVAL;
		} else {
			s->refs++;
			if (!s->stats_path && o->stats_path && *o->stats_path)
				s->stats_path = strdup(o->stats_path);
		}
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->cache_path = strdup(o->cache_path)) ||
	    !(s->origin_path = strdup(o->origin_path))) {
		ret = -ENOMEM;
		goto fail;
	}
	s->config = dup_or_null(o->config);
	s->stats_path = dup_or_null(o->stats_path);
	ret = open_cache(o, &s->cache);
	if (ret < 0)
		goto fail;
	s->refs = 1;
	s->next = shared_list;
	shared_list = s;
	goto out;
fail:
	if (ret == -ENOMEM)
		log_err("wcache: job %s: out of memory\n", td->o.name);
	if (s)
		free_shared(s);
	s = NULL;
out:
	pthread_mutex_unlock(&shared_lock);
	*out = ret < 0 ? NULL : s;
	return ret;
}

static void write_stats(const struct wcfio_shared *s)
{
	struct wc_stats st;
	struct wct_json j;
	FILE *f;

	if (wc_get_stats(s->cache, &st) < 0) {
		log_err("wcache: stats of %s: %s\n", s->cache_path, wc_errmsg());
		return;
	}
	f = fopen(s->stats_path, "w");
	if (!f) {
		log_err("wcache: wc_stats=%s: %s\n", s->stats_path, strerror(errno));
		return;
	}
	wct_json_init(&j, f);
	wct_json_object(&j, NULL, true);
	wct_json_str(&j, "cache", s->cache_path);
	wct_json_str(&j, "origin", s->origin_path);
	wct_json_u64(&j, "size", wc_size(s->cache));
	wct_json_u64(&j, "block_size", wc_block_size(s->cache));
	wct_json_int(&j, "error", st.error);
	wct_json_stats(&j, &st);
	wct_json_str(&j, "granularity", st.granularity);
	wct_json_str(&j, "origin_mode", st.origin_mode);
	wct_json_str(&j, "medium", st.medium);
	wct_json_u64(&j, "medium_records", st.medium_records);
	wct_json_u64(&j, "medium_record_writes", st.medium_record_writes);
	wct_json_u64(&j, "medium_reads", st.medium_reads);
	wct_json_end(&j);
	if (fclose(f) != 0)
		log_err("wcache: wc_stats=%s: %s\n", s->stats_path, strerror(errno));
}

/* Drop a reference; the last one writes the stats and closes the cache. */
static int shared_put(struct wcfio_shared *s)
{
	struct wcfio_shared **pp;
	int ret = 0;

	pthread_mutex_lock(&shared_lock);
	if (--s->refs == 0) {
		for (pp = &shared_list; *pp != s; pp = &(*pp)->next)
			;
		*pp = s->next;
		if (s->stats_path)
			write_stats(s);
		ret = wc_close(s->cache);
		if (ret < 0)
			log_err("wcache: close cache %s: %s\n", s->cache_path, wc_errmsg());
		free_shared(s);
	}
	pthread_mutex_unlock(&shared_lock);
	return ret;
}

static int wcfio_init(struct thread_data *td)
{
	struct wcfio_job *job;
	int ret;

	if (td->o.nr_files > 1) {
		log_err("wcache: job %s: nrfiles=%u, but the cache is one device: use nrfiles=1\n",
		        td->o.name, td->o.nr_files);
		return 1;
	}
	ret = check_options(td, td->eo);
	if (ret == 0)
		ret = check_process_sharing(td, td->eo);
	if (ret < 0)
		return 1;
	job = calloc(1, sizeof(*job));
	if (!job) {
		log_err("wcache: job %s: out of memory\n", td->o.name);
		return 1;
	}
	ret = shared_get(td, &job->shared);
	if (ret < 0) {
		free(job);
		td_verror(td, -ret, "wcache open");
		return 1;
	}
	td->io_ops_data = job;
	return 0;
}

static void wcfio_cleanup(struct thread_data *td)
{
	struct wcfio_job *job = td->io_ops_data;

	if (!job)
		return;
	shared_put(job->shared);
	free(job);
	td->io_ops_data = NULL;
}

/*
 * fio asks for the size before it starts the jobs (in the main process when
 * create_serialize=1, the default): open the cache for the answer and close
 * it again, so no mapping or library thread crosses a fork.
 */
static int wcfio_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct wcfio_job *job = td->io_ops_data;
	struct wcfio_shared *s;
	int ret;

	if (fio_file_size_known(f))
		return 0;
	if (job) {
		f->real_file_size = wc_size(job->shared->cache);
	} else {
		/* Here every job is loaded and none has started or failed yet,
		 * so the sharing check sees them all (in init, a job that
		 * already failed has dropped its engine). */
		ret = check_options(td, td->eo);
		if (ret == 0)
			ret = check_process_sharing(td, td->eo);
		if (ret == 0)
			ret = shared_get(td, &s);
		if (ret < 0) {
			td_verror(td, -ret, "wcache open");
			return 1;
		}
		f->real_file_size = wc_size(s->cache);
		ret = shared_put(s);
		if (ret < 0) {
			td_verror(td, -ret, "wcache close");
			return 1;
		}
	}
	fio_file_set_size_known(f);
	return 0;
}

static int wcfio_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

/* fsync_on_close=1 means "durable before the file is closed": commit. */
static int wcfio_close_file(struct thread_data *td, struct fio_file *f)
{
	struct wcfio_job *job = td->io_ops_data;
	int ret;

	if (!td->o.fsync_on_close || !job)
		return 0;
	ret = wc_flush(job->shared->cache);
	if (ret < 0) {
		log_err("wcache: flush on close of %s: %s\n", job->shared->cache_path, wc_errmsg());
		td_verror(td, -ret, "wcache flush");
		return 1;
	}
	return 0;
}

static enum fio_q_status wcfio_queue(struct thread_data *td, struct io_u *io_u)
{
	struct wcfio_job *job = td->io_ops_data;
	wc_cache *c = job->shared->cache;
	unsigned long long len = io_u->xfer_buflen;
	ssize_t ret;

	fio_ro_check(td, io_u);

	switch (io_u->ddir) {
	case DDIR_READ:
		ret = wc_read(c, io_u->xfer_buf, len, io_u->offset);
		break;
	case DDIR_WRITE:
		/* sync=1 asks for O_SYNC semantics: durable on return. */
		ret = wc_write(c, io_u->xfer_buf, len, io_u->offset, td->o.sync_io ? WC_FUA : 0);
		break;
	case DDIR_TRIM:
		ret = wc_discard(c, io_u->offset, len);
		if (ret == 0)
			ret = (ssize_t)len;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
	case DDIR_SYNC_FILE_RANGE:
		ret = wc_flush(c);
		if (ret == 0)
			ret = (ssize_t)len;
		break;
	default:
		log_err("wcache: job %s: unsupported I/O direction %d\n", td->o.name, io_u->ddir);
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}

	if (ret < 0) {
		io_u->error = (int)-ret;
		log_err("wcache: %s %llu bytes at offset %llu: %s\n", io_ddir_name(io_u->ddir), len,
		        io_u->offset, wc_errmsg());
		td_verror(td, io_u->error, "xfer");
	} else if ((unsigned long long)ret < len) {
		io_u->resid = len - (unsigned long long)ret;
	}
	return FIO_Q_COMPLETED;
}

/*
 * FIO_DISKLESSIO: fio opens, creates and lays out nothing under filename=;
 * FIO_NOEXTEND: the device size is the origin's; FIO_MEMALIGN: page-aligned
 * buffers, as an O_DIRECT origin would want them for read misses.
 */
struct ioengine_ops ioengine = {
	.name = "wcache",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_SYNCIO | FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_MEMALIGN,
	.init = wcfio_init,
	.cleanup = wcfio_cleanup,
	.queue = wcfio_queue,
	.open_file = wcfio_open_file,
	.close_file = wcfio_close_file,
	.get_file_size = wcfio_get_file_size,
	.options = options,
	.option_struct_size = sizeof(struct wcfio_options),
};
