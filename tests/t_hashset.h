/*
 * t_hashset.h - the set of crash-image hashes a crash test has checked,
 * so that it can count distinct images and skip repeats.
 */
#ifndef MISCFS_T_HASHSET_H
#define MISCFS_T_HASHSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open addressing; 0 marks a free slot.  Zero-initialise to start. */
struct t_hashset {
	uint64_t *slot;
	size_t cap, count;
};

/* Is @h new?  It is remembered from now on. */
bool t_hashset_add(struct t_hashset *s, uint64_t h);
void t_hashset_free(struct t_hashset *s);

#endif /* MISCFS_T_HASHSET_H */
