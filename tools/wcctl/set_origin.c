/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * set_origin.c -- `wcctl set-origin`: bind a cache to an origin other than
 * the one it records (lib/core/bind.c).
 *
 * A clean cache holds nothing of its origin, so binding it to another is
 * safe and done at once.  A dirty cache holds blocks that write-back will
 * write into whatever origin it is bound to: that is right only when the new
 * origin holds the old one's data (the device came back with another WWID,
 * the image was copied or moved), so it takes --force, and the command says
 * first what it is about to do.  Nothing is written back here.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "wcctl.h"

static void set_origin_usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl set-origin CACHE ORIGIN [--force] [--options STRING]\n"
	        "Bind CACHE to ORIGIN (a file, a block device, an NBD URI or an RBD spec).\n"
	        "A cache refuses to open with an origin other than the one it was made for;\n"
	        "the same origin under a new name (a renamed file, a device that came back\n"
	        "under another name) is recognised by its identity and needs nothing.  Use\n"
	        "set-origin when the identity changed: a clean cache (no dirty blocks) is\n"
	        "re-bound at once; a cache with dirty blocks only with --force, because\n"
	        "write-back will then write those blocks into ORIGIN -- right only when\n"
	        "ORIGIN holds the data of the origin the cache was made for (moved or copied).\n"
	        "Nothing is written back here; the cache is opened (recovered) and closed.\n\n"
	        "  --force      re-bind a cache that holds dirty blocks\n"
	        "  --options S  configuration for the open\n"
	        "  --help\n");
}

/* What the image says before the library opens it: the recorded origin and
 * the dirty blocks, for the messages. */
static int look(const char *cmd, const char *cache, char *recorded, size_t len, uint64_t *dirty,
                uint32_t *block_size)
{
	struct wcadm_image img;
	char live[256];
	int ret = wcadm_image_open(&img, cache);

	if (img.fd < 0) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	if (img.block) {
		wcadm_image_close(&img);
		return wcctl_blk_look(cmd, cache, recorded, len, dirty, block_size);
	}
	if (!ret && img.live) {
		fprintf(stderr, "%s: %s: close it first\n", cmd, wcctl_live_str(live, sizeof(live), &img));
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	if (!ret)
		ret = wcadm_image_classify(&img);
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	wcctl_identity_str(recorded, len, &img);
	*dirty = img.n_committed;
	*block_size = img.sb.block_size;
	wcadm_image_close(&img);
	return WCCTL_OK;
}

static int open_close(const char *cmd, const char *cache, const char *origin,
                      struct wc_config *cfg, char *identity, size_t len)
{
	struct wc_stats st;
	wc_cache *c;
	int ret = wc_open(&c, cache, origin, cfg);

	if (ret)
		return ret;
	wc_get_stats(c, &st);
	snprintf(identity, len, "%s", st.origin_identity);
	ret = wc_close(c);
	if (ret) {
		fprintf(stderr, "%s: close: %s\n", cmd, wc_errmsg());
		return ret;
	}
	return 0;
}

int wcctl_set_origin(int argc, char **argv)
{
	const char *cmd = argv[0], *options = NULL, *cache, *origin;
	char recorded[1024], identity[1024], s1[32];
	struct wc_config cfg;
	uint64_t dirty = 0;
	uint32_t bs = 0;
	bool force = false;
	const struct wct_opt opts[] = {
		WCT_OPT_STR("options", &options),
		WCT_OPT_FLAG("force", &force),
		WCT_OPT_END,
	};
	int ret;

	ret = wcctl_options(cmd, opts, argc, argv, set_origin_usage, 2, "CACHE ORIGIN");
	if (!ret)
		ret = wcctl_config(&cfg, cmd, options, NULL, true);
	if (ret)
		return ret;
	cache = argv[optind];
	origin = argv[optind + 1];
	cfg.no_threads = true;
	ret = look(cmd, cache, recorded, sizeof(recorded), &dirty, &bs);
	if (ret)
		return ret;

	/* Its own origin (under this name or another): nothing to re-bind. */
	cfg.origin_rebind = WC_ORIGIN_REBIND_NEVER;
	ret = open_close(cmd, cache, origin, &cfg, identity, sizeof(identity));
	if (!ret) {
		printf("%s already belongs to %s: %s\n", cache, origin, identity);
		return WCCTL_OK;
	}
	if (ret != -EXDEV && ret != -EBADMSG) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	if ((dirty || ret == -EBADMSG) && !force) {
		fprintf(stderr, "%s: %s\n%s: refusing: %s holds %" PRIu64 " dirty blocks (%s); "
		        "--force re-binds it, and write-back will then write them into %s\n",
		        cmd, wc_errmsg(), cmd, cache, dirty,
		        wct_size_str(s1, sizeof(s1), dirty * bs), origin);
		return WCCTL_FAIL;
	}
	if (dirty)
		printf("re-binding %s\n  from %s\n  to   %s: its %" PRIu64 " dirty blocks will be "
		       "written back into %s, not into the origin above\n",
		       cache, recorded, origin, dirty, origin);
	cfg.origin_rebind = force ? WC_ORIGIN_REBIND_FORCE : WC_ORIGIN_REBIND_CLEAN;
	ret = open_close(cmd, cache, origin, &cfg, identity, sizeof(identity));
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	printf("%s now belongs to %s (was %s)\n", cache, identity, recorded);
	return WCCTL_OK;
}
