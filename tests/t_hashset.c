/*
 * t_hashset.c - the set of crash-image hashes (t_hashset.h).
 */
#include "t_hashset.h"

#include <stdlib.h>

#include "t.h"

static void grow(struct t_hashset *s)
{
	struct t_hashset n = { .cap = s->cap ? s->cap * 2 : 4096 };

	n.slot = calloc(n.cap, sizeof(*n.slot));
	t_assert(n.slot, "no memory");
	for (size_t i = 0; i < s->cap; i++)
		if (s->slot[i])
			t_hashset_add(&n, s->slot[i]);
	free(s->slot);
	*s = n;
}

bool t_hashset_add(struct t_hashset *s, uint64_t h)
{
	size_t i;

	if ((s->count + 1) * 2 > s->cap)
		grow(s);
	h += !h;
	for (i = h & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == h)
			return false;
	s->slot[i] = h;
	s->count++;
	return true;
}

void t_hashset_free(struct t_hashset *s)
{
	free(s->slot);
	*s = (struct t_hashset){ 0 };
}
