/*
 * bdev_pread.c - the fallback backend: each request is carried out with
 * pread/pwrite inside bdev_submit(), so end_io runs before it returns.
 */
#include "bdev_i.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static ssize_t pread_xfer(int fd, enum bdev_op op, const struct bdev_rest *r)
{
	if (r->cnt == 1 && op == BDEV_OP_READ)
		return pread(fd, r->iov->iov_base, r->iov->iov_len, (off_t)r->off);
	if (r->cnt == 1)
		return pwrite(fd, r->iov->iov_base, r->iov->iov_len, (off_t)r->off);
	if (op == BDEV_OP_READ)
		return preadv(fd, r->iov, (int)r->cnt, (off_t)r->off);
	return pwritev(fd, r->iov, (int)r->cnt, (off_t)r->off);
}

/* Carry out one request to the end: short transfers continue, and the
 * end of the file is an error, never success. */
static int pread_one(struct bdev *bd, struct bdev_req *req)
{
	size_t len = bdev_req_len(req);
	struct bdev_rest rest;
	ssize_t n;

	while (req->done < len) {
		bdev_req_rest(req, &rest);
		n = pread_xfer(bdev_req_fd(bd, req), req->op, &rest);
		if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
			bdev_stat_add(bd, retries, 1);
			continue;
		}
		if (n < 0)
			return -errno;
		if (bdev_xfer_ended(bd, req, (size_t)n))
			return -EIO;
		req->done += (size_t)n;
		if (req->done < len)
			bdev_stat_add(bd, retries, 1);
	}
	return 0;
}

/* The whole file, whatever bd->flush_end says: Linux has no ranged
 * fdatasync, and sync_file_range reaches neither the metadata nor the
 * disk's cache (bdev.h, bdev_set_flush_end). */
static int pread_flush(struct bdev *bd)
{
	int err;

	do
		err = fdatasync(bd->fd) ? -errno : 0;
	while (err == -EINTR);
	return err;
}

static int pread_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	return bdev_submit_inline(bd, reqs, n, pread_one);
}

static void pread_close(struct bdev *bd)
{
	bdev_file_close(bd);
	free(bd);
}

static const struct bdev_ops pread_ops = {
	.name = "pread",
	.submit = pread_submit,
	.flush = pread_flush,
	.close = pread_close,
};

int bdev_pread_setup(struct bdev *file, struct bdev **out, const char **what)
{
	struct bdev *bd = malloc(sizeof(*bd));

	if (!bd) {
		*what = "malloc";
		return -ENOMEM;
	}
	*bd = *file;
	bd->ops = &pread_ops;
	*out = bd;
	return 0;
}
