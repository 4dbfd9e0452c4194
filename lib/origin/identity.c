/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * identity.c -- what identifies a file or a block device, so that a
 * cache opened with the wrong one refuses it (bind.c).
 *
 * A block device: the strongest name sysfs has for it, in this order --
 * the WWID (SCSI, NVMe), the serial (virtio, NVMe, SCSI), a device-mapper
 * or MD array's UUID, and for a loop device the inode of its backing file.
 * These survive a rename (/dev/sdb coming back as /dev/sdc); a partition
 * adds its number and start to its disk's.  Where sysfs has none of them,
 * udev's /dev/disk/by-id name (built from what the device reports, e.g. an
 * ATA disk's model and serial); a device with none of these is known by
 * name only.
 *
 * A file: its inode, and a random tag kept in the extended attribute
 * user.wcache.origin, written when a cache is made for the file (or
 * re-bound to it).  The tag tells a file from a new one that reuses the
 * inode number after the first was deleted; the inode tells it from a
 * copy that carried the attribute along.  Where the file system keeps no
 * user attributes, the device number stands in for the tag.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "origin/origin.h"

#define TAG_XATTR "user.wcache.origin"
#define TAG_BYTES 16

void wc_origin_identity_set(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

const char *wc_origin_kind_name(unsigned kind)
{
	switch (kind) {
	case WC_ORIGIN_IDENTITY_FILE: return "file";
	case WC_ORIGIN_IDENTITY_BLOCK: return "block device";
	case WC_ORIGIN_IDENTITY_NBD: return "NBD export";
	case WC_ORIGIN_IDENTITY_RBD: return "RBD image";
	default: return "origin";
	}
}

/* The first line of a sysfs attribute, trimmed; false when it is absent or
 * empty (an empty serial names nothing). */
static bool sysfs_read(const char *dir, const char *attr, char *buf, size_t len)
{
	char path[512];
	size_t n, start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	n = strlen(buf);
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	while (buf[start] == ' ' || buf[start] == '\t')
		start++;
	memmove(buf, buf + start, n - start + 1);
	return buf[0] != '\0';
}

/* A disk's own identity from its sysfs directory; false when it has none. */
static bool disk_identity(const char *dir, char *out, size_t len)
{
	static const struct { const char *attr, *label; } attrs[] = {
		{ "wwid", "wwid" },           /* NVMe namespace */
		{ "device/wwid", "wwid" },    /* SCSI (from VPD page 0x83) */
		{ "serial", "serial" },       /* virtio-blk */
		{ "device/serial", "serial" },/* NVMe controller, some SCSI */
		{ "dm/uuid", "dm-uuid" },     /* device-mapper (LVM names its LVs here) */
		{ "md/uuid", "md-uuid" },     /* MD RAID */
	};
	char val[160];

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (sysfs_read(dir, attrs[i].attr, val, sizeof(val))) {
			snprintf(out, len, "%s %s", attrs[i].label, val);
			return true;
		}
	return false;
}

/* A loop device is its backing file: the same file behind another loop
 * device is the same origin, another file is not. */
static bool loop_identity(int fd, char *out, size_t len)
{
	struct loop_info64 info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, LOOP_GET_STATUS64, &info) < 0)
		return false;
	snprintf(out, len, "loop over device %u:%u inode %llu", major((dev_t)info.lo_device),
	         minor((dev_t)info.lo_device), (unsigned long long)info.lo_inode);
	return true;
}

/* The by-id link udev made for this device: a wwn- name first, else the
 * first in name order (deterministic from one open to the next); names of
 * device-mapper devices by name are skipped (a name, not an identity). */
static bool by_id_identity(dev_t rdev, char *out, size_t len)
{
	char best[256] = "", path[512], full[sizeof(best) + 8];
	struct dirent *de;
	DIR *d = opendir("/dev/disk/by-id");

	if (!d)
		return false;
	while ((de = readdir(d))) {
		struct stat st;
		bool wwn = strncmp(de->d_name, "wwn-", 4) == 0, best_wwn = strncmp(best, "wwn-", 4) == 0;

		if (de->d_name[0] == '.' || strncmp(de->d_name, "dm-name-", 8) == 0)
			continue;
		snprintf(path, sizeof(path), "/dev/disk/by-id/%s", de->d_name);
		if (stat(path, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != rdev)
			continue;
		if (!best[0] || (wwn && !best_wwn) || (wwn == best_wwn && strcmp(de->d_name, best) < 0))
			snprintf(best, sizeof(best), "%s", de->d_name);
	}
	closedir(d);
	if (!best[0])
		return false;
	snprintf(full, sizeof(full), "by-id %s", best);
	wc_origin_identity_set(out, len, full);
	return true;
}

static void block_identity(int fd, const struct stat *st, struct wc_origin_identity *out)
{
	char dir[128], disk[256], part[32], start[32];
	char *slash;
	ssize_t n;

	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u", major(st->st_rdev), minor(st->st_rdev));
	if (access(dir, F_OK) == 0 && sysfs_read(dir, "loop/backing_file", disk, sizeof(disk)) &&
	    loop_identity(fd, out->id, sizeof(out->id)))
		return;
	if (disk_identity(dir, out->id, sizeof(out->id)))
		return;
	/* A partition: its disk's identity, its number and where it starts. */
	if (sysfs_read(dir, "partition", part, sizeof(part)) &&
	    sysfs_read(dir, "start", start, sizeof(start)) &&
	    (n = readlink(dir, disk, sizeof(disk) - 1)) > 0) {
		char parent[512], id[WC_ORIGIN_IDENTITY_ID_LEN], full[512];

		disk[n] = '\0';
		slash = strrchr(disk, '/');
		if (slash && disk[0] == '.') {
			*slash = '\0';
			snprintf(parent, sizeof(parent), "/sys/dev/block/%s", disk);
			if (disk_identity(parent, id, sizeof(id) - 48)) {
				snprintf(full, sizeof(full), "%s partition %s start %s", id, part, start);
				wc_origin_identity_set(out->id, sizeof(out->id), full);
				return;
			}
		}
	}
	by_id_identity(st->st_rdev, out->id, sizeof(out->id));
}

/* The file's tag: read it, or (may_tag) make one. */
static bool file_tag(int fd, bool may_tag, uint8_t tag[TAG_BYTES])
{
	ssize_t n = fgetxattr(fd, TAG_XATTR, tag, TAG_BYTES);
	int ur;

	if (n == TAG_BYTES)
		return true;
	if (!may_tag || n >= 0 || (errno != ENODATA && errno != ERANGE))
		return false;
	ur = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (ur < 0)
		return false;
	n = read(ur, tag, TAG_BYTES);
	close(ur);
	if (n != TAG_BYTES)
		return false;
	if (fsetxattr(fd, TAG_XATTR, tag, TAG_BYTES, XATTR_CREATE) == 0)
		return true;
	/* Another cache tagged it meanwhile: take that one. */
	return errno == EEXIST && fgetxattr(fd, TAG_XATTR, tag, TAG_BYTES) == TAG_BYTES;
}

int wc_origin_identify_fd(int fd, const char *path, struct wc_origin_identity *out, bool may_tag)
{
	struct stat st;

	memset(out, 0, sizeof(*out));
	wc_origin_identity_set(out->name, sizeof(out->name), path);
	if (fstat(fd, &st) < 0)
		return wc_err_sys(-errno, "origin %s: fstat", path);
	if (S_ISBLK(st.st_mode)) {
		out->kind = WC_ORIGIN_IDENTITY_BLOCK;
		block_identity(fd, &st, out);
		return 0;
	}
	out->kind = WC_ORIGIN_IDENTITY_FILE;
	{
		uint8_t tag[TAG_BYTES];
		char hex[2 * TAG_BYTES + 1];

		if (file_tag(fd, may_tag, tag)) {
			for (unsigned i = 0; i < TAG_BYTES; i++)
				snprintf(hex + 2 * i, 3, "%02x", tag[i]);
			snprintf(out->id, sizeof(out->id), "inode %llu tag %s",
			         (unsigned long long)st.st_ino, hex);
		} else {
			snprintf(out->id, sizeof(out->id), "device %u:%u inode %llu", major(st.st_dev),
			         minor(st.st_dev), (unsigned long long)st.st_ino);
		}
	}
	return 0;
}
