/*
 * t_teardown.c - a cache synced and destroyed while its device is still
 * finishing the completions: on an asynchronous device end_io runs in the
 * device's thread and still touches the page and the cache after the
 * waiting thread was let go.  Many short lives of a cache, each ending in
 * pc_sync_mapping, destruction, and then the device's close.  Run on the
 * memory device in asynchronous mode and on io_uring (under ASan a
 * completion that outlives the cache is a use after free).
 */
#include "t_pc.h"

#define BS 1024u
#define BLOCKS 256u
#define LIVES 200u

static void one_life(unsigned int life)
{
	struct t_env e;
	struct pc_page *p;

	t_env_init(&e, BS, BLOCKS, 128, false);
	for (uint64_t i = 0; i < 8; i++) {
		t_ok(pc_read_cache_page(e.m, i * 7, &p));
		pc_lock_page(p);
		t_pattern(p->data, life * 100 + i, BS);
		pc_set_page_dirty(p);
		pc_unlock_page(p);
		pc_put_page(p);
	}
	t_ok(pc_sync_mapping(e.m));
	t_env_fini(&e);         /* the mapping, the cache, then the device */
}

static void test_lives_end_before_completions(void)
{
	for (unsigned int life = 0; life < LIVES; life++)
		one_life(life);
}

T_MAIN(T_CASE(test_lives_end_before_completions))
