/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c -- one owner at a time.
 *
 * Two handles on one cache overwrite each other's commits and recoveries,
 * and a write one of them acknowledged with WC_FUA is lost; so a cache file
 * (and an origin) takes an exclusive lock before anything reads it for
 * recovery or writes it, and keeps it until close.  The kernel drops it
 * when the process dies, kill -9 included, so a crash never leaves a cache
 * that cannot be opened.
 *
 * Why an open-file-description lock (F_OFD_SETLK) and not the others:
 *  - A POSIX lock (F_SETLK) belongs to the process: a second wc_open in the
 *    same process would be granted, and any close() of any descriptor of the
 *    file in that process (a refused open, a tool reading the image) would
 *    silently drop it.
 *  - flock() belongs to the file description too and would exclude just as
 *    well on a local file system, but it cannot be tested without being
 *    taken: a read-only inspector (wcctl status) would have to grab it for
 *    a moment, and an owner opening in that moment would be refused for
 *    nothing.  F_OFD_GETLK tests without taking.  flock() on NFS is also
 *    emulated with byte-range locks (flock(2)), with other semantics.
 *  - An OFD lock lives in the same table as POSIX locks, so it also stops a
 *    tool that takes a POSIX lock on the file.
 *
 * The price: an OFD lock records no process.  F_OFD_GETLK reports l_pid -1
 * (0 on some kernels) and /proc/locks prints -1.  The holder is found as
 * the descriptor whose /proc/PID/fdinfo lists the lock; that works for
 * processes this user may inspect (its own, or all for root) in this pid
 * namespace, and the message says so when it does not.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/error.h"
#include "util/lock.h"

/* The whole file: any other whole-file or byte-range lock conflicts. */
static void whole_file(struct flock *fl, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = 0;
	fl->l_len = 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Does /proc/PID/fdinfo/FD list an OFD write lock on the inode `key`
 * ("MAJ:MIN:INO ", as the kernel prints it)? */
static bool fdinfo_has_lock(int fdinfo_dir, const char *fd, const char *key)
{
	char buf[4096];
	ssize_t n;
	int f = openat(fdinfo_dir, fd, O_RDONLY | O_CLOEXEC);
	bool found = false;

	if (f < 0)
		return false;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "lock:", 5) == 0 && strstr(line, " OFDLCK ") &&
		    strstr(line, " WRITE ") && strstr(line, key)) {
			found = true;
			break;
		}
	}
	return found;
}

/* Is one of PID's descriptors the holder?  -1 when its fds cannot be read. */
static int pid_holds(const char *pid, const char *key)
{
	char path[64];
	DIR *fds;
	struct dirent *d;
	int fdinfo, found = 0;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	fds = opendir(path);
	if (!fds)
		return errno == ENOENT ? 0 : -1; /* gone meanwhile, or not ours to read */
	snprintf(path, sizeof(path), "/proc/%s/fdinfo", pid);
	fdinfo = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fdinfo < 0) {
		closedir(fds);
		return errno == ENOENT ? 0 : -1;
	}
	while (!found && (d = readdir(fds))) {
		char target[8];
		ssize_t n;

		if (!all_digits(d->d_name))
			continue;
		/* Only files with a path can hold our lock: skip sockets,
		 * pipes and anonymous inodes without opening their fdinfo. */
		n = readlinkat(dirfd(fds), d->d_name, target, sizeof(target));
		if (n <= 0 || target[0] != '/')
			continue;
		found = fdinfo_has_lock(fdinfo, d->d_name, key);
	}
	close(fdinfo);
	closedir(fds);
	return found;
}

static void read_comm(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, (int)len, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
}

static void find_holder(int fd, struct wc_lock_holder *h)
{
	struct stat st;
	char key[64], self[24];
	DIR *proc;
	struct dirent *d;
	unsigned unreadable = 0;

	if (fstat(fd, &st)) {
		snprintf(h->why, sizeof(h->why), "cannot be read: fstat: %s", strerror(errno));
		return;
	}
	snprintf(key, sizeof(key), " %02x:%02x:%llu ", major(st.st_dev), minor(st.st_dev),
	         (unsigned long long)st.st_ino);
	snprintf(self, sizeof(self), "%ld", (long)getpid());
	h->self = pid_holds(self, key) == 1;
	/* Another process first even when this one holds the lock too: after
	 * a fork both hold the owner's descriptor, and the owner is the other
	 * one (a child does not use its parent's cache). */
	proc = opendir("/proc");
	if (!proc && !h->self) {
		snprintf(h->why, sizeof(h->why), "cannot be read: /proc: %s", strerror(errno));
		return;
	}
	while (proc && (d = readdir(proc))) {
		int r;

		if (!all_digits(d->d_name) || strcmp(d->d_name, self) == 0)
			continue;
		r = pid_holds(d->d_name, key);
		if (r < 0)
			unreadable++;
		else if (r) {
			h->pid = (pid_t)atol(d->d_name);
			h->inherited = h->self;
			h->self = false;
			break;
		}
	}
	if (proc)
		closedir(proc);
	if (!h->pid && h->self)
		h->pid = getpid();
	if (h->pid)
		read_comm(h->pid, h->comm, sizeof(h->comm));
	else if (unreadable)
		snprintf(h->why, sizeof(h->why),
		         "is not visible to this user: the open files of %u processes cannot be read",
		         unreadable);
	else
		snprintf(h->why, sizeof(h->why),
		         "cannot be known: an OFD lock records no pid, and no process visible here "
		         "lists it");
}

int wc_lock_probe(int fd, const char *path, struct wc_lock_holder *holder)
{
	struct flock fl;

	whole_file(&fl, F_WRLCK);
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return wc_err_sys(-errno, "%s: test for an owner's lock (F_OFD_GETLK)", path);
	if (fl.l_type == F_UNLCK)
		return 0;
	if (holder) {
		memset(holder, 0, sizeof(*holder));
		/* Some kernels and network file systems do report a pid. */
		if (fl.l_pid > 0) {
			holder->pid = fl.l_pid;
			holder->self = fl.l_pid == getpid();
			read_comm(holder->pid, holder->comm, sizeof(holder->comm));
		} else {
			find_holder(fd, holder);
		}
	}
	return 1;
}

const char *wc_lock_holder_str(char *buf, size_t len, const struct wc_lock_holder *h)
{
	if (h->pid && h->self)
		snprintf(buf, len, "this process (pid %ld), through another handle", (long)h->pid);
	else if (h->pid)
		snprintf(buf, len, "pid %ld%s%s%s%s", (long)h->pid, h->comm[0] ? " (" : "", h->comm,
		         h->comm[0] ? ")" : "",
		         h->inherited ? ", whose descriptor this process inherited" : "");
	else
		snprintf(buf, len, "another process (its pid %s)", h->why);
	return buf;
}

int wc_lock_take(int fd, const char *what, const char *path)
{
	struct wc_lock_holder h;
	struct flock fl;
	char who[200];
	int err;

	whole_file(&fl, F_WRLCK);
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	err = errno;
	if (err != EAGAIN && err != EACCES)
		return wc_err_sys(-err, "%s %s: cannot take the owner's lock (F_OFD_SETLK), so "
		                  "exclusive use cannot be guaranteed", what, path);
	/* The holder may have let go between the two calls: then say so
	 * rather than guess. */
	if (wc_lock_probe(fd, path, &h) != 1)
		return wc_err(-EBUSY, "%s %s is in use: it was locked by another owner a moment ago",
		              what, path);
	return wc_err(-EBUSY, "%s %s is in use by %s: one owner at a time (close it there first)",
	              what, path, wc_lock_holder_str(who, sizeof(who), &h));
}
