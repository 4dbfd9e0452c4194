/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_replay.c -- what a sweep keeps of a violation, and regression tests
 * from it: dumping a violating image, replaying a dumped image (recovery
 * bugs), and rerunning a recorded sweep (protocol bugs, tests/crash-
 * regressions/<name>/rerun.txt).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_block.h"
#include "crash_run_impl.h"
#include "core/format.h"

static int gzip_file(const char *path)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "gzip -9nf '%s'", path);
	return system(cmd) == 0 ? 0 : -EIO;
}

int crash_dump_violation(struct crash_drv *d, const struct crash_capture *cap, const char *why)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	FILE *f;

	if (!d->o->dump_dir)
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s-s%" PRIu64 "-i%" PRIu64, d->o->dump_dir, d->wl->name,
	         d->o->seed, d->r->images);
	mkdir(d->o->dump_dir, 0755);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/cache.img", dir);
	if (crash_write_file(path, cap->cache_img, cap->cache_len) != 0 || gzip_file(path) != 0)
		return -EIO;
	snprintf(path, sizeof(path), "%s/origin.img", dir);
	if (crash_write_file(path, cap->origin_img, cap->origin_len) != 0 || gzip_file(path) != 0)
		return -EIO;
	snprintf(path, sizeof(path), "%s/model.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	wc_model_save(d->model, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/case.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "window %" PRIu64 " %" PRIu64 "\nformatting %d\nlabel %s\nwhy %s\n", cap->w.lo,
	        cap->w.hi, cap->formatting, cap->label, why);
	fclose(f);
	crash_say(d->o, "  dumped to %s\n", dir);
	return 0;
}

/* Read `name` or `name`.gz from dir into a new buffer. */
static int read_maybe_gz(const char *dir, const char *name, uint8_t **out, size_t *len)
{
	char path[PATH_MAX + 64], cmd[PATH_MAX + 96];
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	FILE *f;
	bool gz;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%s.gz", dir, name);
	gz = access(path, R_OK) == 0;
	if (gz) {
		snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
		f = popen(cmd, "r");
	} else {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		f = fopen(path, "rb");
	}
	if (!f) {
		free(buf);
		return -ENOENT;
	}
	for (;;) {
		size_t got;

		if (n == cap) {
			uint8_t *b = realloc(buf, cap * 2);

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		got = fread(buf + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	if ((gz ? pclose(f) : fclose(f)) != 0 || n == 0) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* A dumped image: recover it once more and check it against its model. */
static int replay_image(const char *dir, const char *scratch_dir, FILE *log, char *why,
                        size_t why_len)
{
	static const struct crash_workload replay_wl = { .name = "replay" };
	struct crash_opts o = { .scratch_dir = scratch_dir, .log = log };
	struct crash_result r = { 0 };
	struct crash_drv d = { .o = &o, .r = &r, .wl = &replay_wl };
	struct crash_capture cap = { .formatting = false };
	char path[PATH_MAX + 32], line[256];
	int formatting = 0, ret;
	FILE *f;

	snprintf(why, why_len, "cannot read %s", dir);
	snprintf(path, sizeof(path), "%s/model.txt", dir);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ret = wc_model_load(&d.model, f);
	fclose(f);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/case.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		wc_model_free(d.model);
		return -errno;
	}
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "window %" SCNu64 " %" SCNu64, &cap.w.lo, &cap.w.hi) != 2 ||
	    !fgets(line, sizeof(line), f) || sscanf(line, "formatting %d", &formatting) != 1) {
		fclose(f);
		wc_model_free(d.model);
		return -EINVAL;
	}
	fclose(f);
	cap.formatting = formatting != 0;
	snprintf(cap.label, sizeof(cap.label), "replay of %.170s", dir);
	ret = read_maybe_gz(dir, "cache.img", &cap.cache_img, &cap.cache_len);
	if (!ret)
		ret = read_maybe_gz(dir, "origin.img", &cap.origin_img, &cap.origin_len);
	if (!ret && cap.origin_len != wc_model_blocks(d.model) * wc_model_block_size(d.model))
		ret = -EINVAL;
	if (!ret) {
		d.buf = crash_io_buffer(cap.origin_len);
		wc_rng_seed(&d.img_rng, 1);
		if (!d.buf)
			abort();
		why[0] = '\0';
		ret = crash_verify(&d, &cap, 1) ? 1 : 0;
		snprintf(why, why_len, "replay of the image: images=1 violations=%d", ret);
		if (r.errors)
			ret = -EIO;
	}
	free(d.buf);
	free(cap.cache_img);
	free(cap.origin_img);
	wc_model_free(d.model);
	return ret;
}

/*
 * A protocol bug cannot be kept as an image: the fixed cache never writes
 * the image the buggy one did, and the data the image lost stays lost.  So
 * such a regression is kept as the sweep that found it (rerun.txt), one
 * line of crash-sweep's options without the dashes, every option named so
 * that a change of crash-sweep's defaults cannot change what it runs:
 *
 *   workload random seed 17 images 2100 random-per-point 2
 *       written-per-mille 50 recovery-every 4 probe-every 16
 *
 * "workload all" runs every workload in turn, as crash-sweep does without
 * --workload; "sabotage N" (optional) is crash-sweep's --sabotage.  '#'
 * starts a comment line.
 */
struct rerun_spec {
	char workload[64];
	uint64_t seed, images;
	struct crash_opts o;
};

static int rerun_parse(const char *line, struct rerun_spec *spec, char *why, size_t why_len)
{
	static const struct {
		const char *key;
		uint64_t min, max;
	} keys[] = {
		{ "seed", 0, UINT64_MAX },         { "images", 1, UINT64_MAX },
		{ "random-per-point", 1, 8 },      { "written-per-mille", 0, 1000 },
		{ "recovery-every", 0, UINT32_MAX }, { "probe-every", 0, UINT32_MAX },
		{ "sabotage", 1, UINT32_MAX },     /* optional: tests show a rerun can fail */
	};
	enum { NKEYS = sizeof(keys) / sizeof(keys[0]), NREQUIRED = NKEYS - 1 };
	uint64_t val[NKEYS] = { 0 };
	bool seen[NKEYS] = { false }, named = false;
	char key[32], word[64], *end;
	int pos = 0, n;

	while (sscanf(line + pos, "%31s %63s%n", key, word, &n) == 2) {
		size_t k = 0;

		pos += n;
		if (strcmp(key, "workload") == 0) {
			if (strcmp(word, "all") != 0 && !crash_workload_find(word)) {
				snprintf(why, why_len, "rerun.txt: unknown workload '%s'", word);
				return -EINVAL;
			}
			snprintf(spec->workload, sizeof(spec->workload), "%s", word);
			named = true;
			continue;
		}
		while (k < NKEYS && strcmp(keys[k].key, key) != 0)
			k++;
		if (k == NKEYS) {
			snprintf(why, why_len, "rerun.txt: unknown option '%s'", key);
			return -EINVAL;
		}
		errno = 0;
		val[k] = strtoull(word, &end, 0);
		if (errno || *end || word[0] == '-' || val[k] < keys[k].min || val[k] > keys[k].max) {
			snprintf(why, why_len, "rerun.txt: %s: '%s' is not a number in [%" PRIu64 ", %" PRIu64
			         "]", key, word, keys[k].min, keys[k].max);
			return -EINVAL;
		}
		seen[k] = true;
	}
	if (sscanf(line + pos, "%31s", key) == 1) {
		snprintf(why, why_len, "rerun.txt: option '%s' has no value", key);
		return -EINVAL;
	}
	for (size_t k = 0; k < NREQUIRED; k++)
		if (!seen[k] || !named) {
			snprintf(why, why_len, "rerun.txt: the line must name every option (missing %s)",
			         named ? keys[k].key : "workload");
			return -EINVAL;
		}
	spec->seed = val[0];
	spec->images = val[1];
	spec->o.random_per_point = (unsigned)val[2];
	spec->o.written_per_mille = (unsigned)val[3];
	spec->o.recovery_every = (unsigned)val[4];
	spec->o.probe_every = (unsigned)val[5];
	spec->o.sabotage_drain_every = (unsigned)val[6];
	return 0;
}

/* The one line of rerun.txt that is not blank or a comment. */
static int rerun_read(const char *path, struct rerun_spec *spec, char *why, size_t why_len)
{
	char line[512];
	unsigned lines = 0;
	int ret = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		ret = -errno;
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	while (ret == 0 && fgets(line, sizeof(line), f)) {
		char first[2];

		if (sscanf(line, " %1s", first) != 1 || first[0] == '#')
			continue;
		if (++lines > 1) {
			snprintf(why, why_len, "%s: more than one sweep line", path);
			ret = -EINVAL;
		} else {
			ret = rerun_parse(line, spec, why, why_len);
		}
	}
	fclose(f);
	if (ret == 0 && lines == 0) {
		snprintf(why, why_len, "%s: no sweep line", path);
		ret = -EINVAL;
	}
	return ret;
}

/*
 * The loop of crash-sweep (keep the two alike): seeds S, S+1, ... each run
 * the workload, or every workload in turn, until `images` images were
 * checked; the last run stops capturing at that count.  So the rerun and
 * "crash-sweep --images N --seed S ..." capture the same images.
 */
static void rerun_sweep(const struct rerun_spec *spec, struct crash_opts *o, struct crash_result *r)
{
	bool all = strcmp(spec->workload, "all") == 0;

	o->seed = spec->seed;
	o->max_images = spec->images;
	while (r->images < spec->images && r->errors == 0) {
		uint64_t before = r->images;

		for (const char *const *n = crash_workloads();
		     *n && r->images < spec->images && r->errors == 0; n++) {
			int ret;

			if (!all && strcmp(*n, spec->workload) != 0)
				continue;
			ret = crash_run(*n, o, r);
			if (ret < 0 && r->errors == 0) {
				crash_say(o, "workload %s seed %" PRIu64 ": %s\n", *n, o->seed, strerror(-ret));
				r->errors++;
			}
		}
		o->seed++;
		if (r->images == before && r->errors == 0) {
			/* The next seeds would not capture any either: stop, and fail. */
			crash_say(o, "seed %" PRIu64 " captured no image\n", o->seed - 1);
			r->errors++;
		}
	}
}

/* A sweep of the block medium (crash_block.h) names its medium first. */
static bool rerun_is_block(const char *path, char *line, size_t len)
{
	FILE *f = fopen(path, "r");
	bool yes = false;

	if (!f)
		return false;
	while (fgets(line, (int)len, f)) {
		char first[8];

		if (sscanf(line, " %7s", first) != 1 || first[0] == '#')
			continue;
		yes = strcmp(first, "medium") == 0;
		break;
	}
	fclose(f);
	return yes;
}

static int rerun(const char *path, const char *scratch_dir, FILE *log, char *why, size_t why_len)
{
	struct rerun_spec spec = { .workload = "" };
	struct crash_result r = { 0 };
	char line[512];
	int ret;

	if (rerun_is_block(path, line, sizeof(line)))
		return blk_rerun(line, log, why, why_len);
	ret = rerun_read(path, &spec, why, why_len);

	if (ret)
		return ret;
	spec.o.scratch_dir = scratch_dir;
	spec.o.log = log;
	rerun_sweep(&spec, &spec.o, &r);
	snprintf(why, why_len, "rerun of workload %s seed %" PRIu64 " images %" PRIu64 ": images=%"
	         PRIu64 " violations=%" PRIu64 " (recovery %" PRIu64 ", probes %" PRIu64 ", seeds %"
	         PRIu64 "..%" PRIu64 ")", spec.workload, spec.seed, spec.images, r.images,
	         r.violations, r.recovery_images, r.probes, spec.seed, spec.o.seed - 1);
	if (r.errors)
		return -EIO;
	/* A rerun that checks nothing would pass forever. */
	if (r.images < spec.images)
		return -ENODATA;
	return r.violations ? 1 : 0;
}

/* At most this many lines of a replay's log reach stderr. */
#define REPLAY_LOG_LINES 20

/* Echo the log (its head) and append its first violation to why. */
static void replay_report(const char *log, char *why, size_t why_len)
{
	const char *v = strstr(log, "VIOLATION"), *p = log;
	size_t used = strlen(why);
	unsigned lines = 0;

	for (; *p && lines < REPLAY_LOG_LINES; lines++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);

		fwrite(p, 1, len, stderr);
		p += len;
	}
	if (*p)
		fprintf(stderr, "(%zu more bytes of log)\n", strlen(p));
	if (!v)
		v = log[0] ? log : NULL;
	if (v && used + 3 < why_len)
		snprintf(why + used, why_len - used, "; %.*s", (int)strcspn(v, "\n"), v);
}

int crash_replay(const char *dir, const char *scratch_dir, char *why, size_t why_len)
{
	char path[PATH_MAX + 32], *log = NULL;
	size_t log_len = 0;
	FILE *f = open_memstream(&log, &log_len);
	int ret;

	if (!f)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/rerun.txt", dir);
	if (access(path, F_OK) == 0)
		ret = rerun(path, scratch_dir, f, why, why_len);
	else
		ret = replay_image(dir, scratch_dir, f, why, why_len);
	fclose(f);
	if (ret != 0)
		replay_report(log, why, why_len);
	free(log);
	return ret;
}

