/*
 * t_bdev.h - helpers shared by the block layer's tests.
 */
#ifndef MISCFS_T_BDEV_H
#define MISCFS_T_BDEV_H

#include "bdev.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "t.h"

/* A private directory, removed with its contents at exit. */
const char *t_workdir(void);
/* A file of @size bytes (zeros) in the work directory; returns its path. */
char *t_image(const char *name, uint64_t size);

/* Deterministic pseudo-random bytes. */
void t_fill(void *buf, size_t len, uint64_t seed);
uint64_t t_rand(uint64_t *state);
/* The first differing byte offset of two buffers, or -1. */
long t_diff(const void *a, const void *b, size_t len);
void *t_alloc(size_t len);  /* bdev_alloc_buf() that cannot fail */

/* Counting completions of asynchronous requests (end_io = t_batch_end_io,
 * private = the batch). */
struct t_batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int left;
	unsigned int errors;
	int first_error;
};
void t_batch_init(struct t_batch *b, unsigned int count);
void t_batch_end_io(struct bdev_req *req);
void t_batch_wait(struct t_batch *b);

/* Capture log lines; t_log_count() counts captured lines containing @s. */
void t_log_capture(void);
unsigned int t_log_count(const char *s);
void t_log_reset(void);

#endif /* MISCFS_T_BDEV_H */
