/* shoal_ocean_arena.h — the memory an Ocean env allocates in my_init, side by side.
 *
 * Ocean envs calloc() their arrays (maps, agent tables, graphs) in my_init, a few small blocks per
 * env. In PufferLib's C loop they land next to each other in a fresh heap; inside a long-running
 * Python process they land wherever the heap has holes, and the env's step then reads more cache
 * lines and pages than in PufferLib's loop: how fast an env steps would depend on the process's
 * allocation history.
 *
 * So while my_init runs, the adapter makes malloc/calloc/realloc draw from an arena of the env's
 * own (blocks of growing size, 16-byte aligned like malloc, zeroed). Outside my_init they are
 * libc's, and so are, inside it, an allocation larger than half a block and every allocation once the
 * arena holds SHOAL_OCEAN_ARENA_CAPACITY: arena memory is never reused before close, and an env
 * that searches in its init (tower_climb's puzzle BFS: millions of malloc/free pairs, a 10M-node
 * queue per search) would otherwise keep every byte it ever asked for (68 GiB of address space and
 * 1.2 GB resident per Serial vector, after which the process could no longer fork). free() and realloc()
 * of arena memory are recognised by address: free does nothing (the arena goes at close, after
 * c_close), realloc moves the data to libc memory. The binding's files
 * are not modified: the adapter defines these names as macros before including them, after the
 * system headers that declare the real functions.
 */
#ifndef SHOAL_OCEAN_ARENA_H
#define SHOAL_OCEAN_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <shoal/env.h>

#define SHOAL_OCEAN_ARENA_ALIGN 16
#define SHOAL_OCEAN_ARENA_FIRST_BLOCK 1024
#define SHOAL_OCEAN_ARENA_MAX_BLOCK (1u << 20)
#define SHOAL_OCEAN_ARENA_CAPACITY (16u << 20)

typedef struct shoal_ocean_arena_block {
    struct shoal_ocean_arena_block* next;
    size_t used, capacity;
    _Alignas(SHOAL_OCEAN_ARENA_ALIGN) unsigned char data[];
} shoal_ocean_arena_block;

/* An allocation's size, kept in front of it for realloc. */
typedef struct shoal_ocean_arena_header {
    _Alignas(SHOAL_OCEAN_ARENA_ALIGN) size_t size;
} shoal_ocean_arena_header;

typedef struct shoal_ocean_arena {
    shoal_ocean_arena_block* blocks; /* newest first */
    size_t reserved;                 /* bytes of its blocks */
} shoal_ocean_arena;

/* The arena allocations go to on this thread: the env whose my_init runs, else none. */
static SHOAL_THREAD_LOCAL shoal_ocean_arena* shoal_ocean__filling SHOAL_UNUSED;
/* The env struct whose c_close runs on this thread: some envs' c_close ends with free(env) (PufferLib's
 * classes of those envs never call it), but the struct is part of shoal's, so that free does nothing. */
static SHOAL_THREAD_LOCAL const void* shoal_ocean__closing SHOAL_UNUSED;

/* The arena of `env` (defined by the adapter, which knows its struct). */
static shoal_ocean_arena* shoal_ocean_arena_of(shoal_env* env);

static inline SHOAL_UNUSED int shoal_ocean_arena_owns(const shoal_ocean_arena* arena, const void* pointer) {
    const unsigned char* p = (const unsigned char*)pointer;
    for (const shoal_ocean_arena_block* b = arena ? arena->blocks : NULL; b; b = b->next)
        if (p >= b->data && p < b->data + b->capacity) return 1;
    return 0;
}

static SHOAL_UNUSED void* shoal_ocean_arena_take(shoal_ocean_arena* arena, size_t size) {
    if (size > SIZE_MAX / 2) return NULL;
    const size_t need = sizeof(shoal_ocean_arena_header) +
                        (size + SHOAL_OCEAN_ARENA_ALIGN - 1) / SHOAL_OCEAN_ARENA_ALIGN * SHOAL_OCEAN_ARENA_ALIGN;
    shoal_ocean_arena_block* block = arena->blocks;
    if (!block || block->capacity - block->used < need) {
        size_t capacity = block ? 2 * block->capacity : SHOAL_OCEAN_ARENA_FIRST_BLOCK;
        if (capacity > SHOAL_OCEAN_ARENA_MAX_BLOCK) capacity = SHOAL_OCEAN_ARENA_MAX_BLOCK;
        /* An allocation that would fill half of the next block gets a block of its own, behind the
         * current one, which stays the block small allocations come from: a few large arrays then
         * no longer leave the env's small ones in mostly empty blocks twice their size. */
        const int alone = block && need > capacity / 2;
        if (alone || capacity < need) capacity = need;
        block = (shoal_ocean_arena_block*)calloc(1, sizeof(shoal_ocean_arena_block) + capacity);
        if (!block) return NULL;
        block->capacity = capacity;
        if (alone) {
            block->next = arena->blocks->next;
            arena->blocks->next = block;
        } else {
            block->next = arena->blocks;
            arena->blocks = block;
        }
        arena->reserved += capacity;
    }
    shoal_ocean_arena_header* header = (shoal_ocean_arena_header*)(void*)(block->data + block->used);
    block->used += need;
    header->size = size;
    return header + 1;
}

static SHOAL_UNUSED void shoal_ocean_arena_release(shoal_ocean_arena* arena) {
    for (shoal_ocean_arena_block* b = arena->blocks; b;) {
        shoal_ocean_arena_block* next = b->next;
        free(b);
        b = next;
    }
    arena->blocks = NULL;
    arena->reserved = 0;
}

/* The arena an allocation of `size` bytes goes to on this thread, or NULL for libc's heap. */
static inline SHOAL_UNUSED shoal_ocean_arena* shoal_ocean_arena_for(size_t size) {
    shoal_ocean_arena* arena = shoal_ocean__filling;
    if (!arena || size > SHOAL_OCEAN_ARENA_MAX_BLOCK / 2) return NULL;
    const shoal_ocean_arena_block* block = arena->blocks;
    const int fits = block && block->capacity - block->used >= sizeof(shoal_ocean_arena_header) + size;
    return fits || arena->reserved < SHOAL_OCEAN_ARENA_CAPACITY ? arena : NULL;
}

static SHOAL_UNUSED void* shoal_ocean_malloc(size_t size) {
    shoal_ocean_arena* arena = shoal_ocean_arena_for(size);
    return arena ? shoal_ocean_arena_take(arena, size) : malloc(size);
}

static SHOAL_UNUSED void* shoal_ocean_calloc(size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    shoal_ocean_arena* arena = shoal_ocean_arena_for(count * size);
    return arena ? shoal_ocean_arena_take(arena, count * size) : calloc(count, size); /* blocks start zeroed */
}

/* The arena `pointer` belongs to, if any: the one being filled, else the env being stepped's. */
static SHOAL_UNUSED shoal_ocean_arena* shoal_ocean_arena_holding(const void* pointer) {
    if (shoal_ocean_arena_owns(shoal_ocean__filling, pointer)) return shoal_ocean__filling;
    shoal_env* env = shoal_ocean_current();
    shoal_ocean_arena* arena = env ? shoal_ocean_arena_of(env) : NULL;
    return shoal_ocean_arena_owns(arena, pointer) ? arena : NULL;
}

static SHOAL_UNUSED void shoal_ocean_free(void* pointer) {
    if (pointer && pointer != shoal_ocean__closing && !shoal_ocean_arena_holding(pointer)) free(pointer);
}

static SHOAL_UNUSED void* shoal_ocean_realloc(void* pointer, size_t size) {
    if (!pointer || !shoal_ocean_arena_holding(pointer)) {
        if (!pointer) return shoal_ocean_malloc(size);
        return realloc(pointer, size);
    }
    const size_t old = ((const shoal_ocean_arena_header*)pointer - 1)->size;
    void* moved = shoal_ocean_malloc(size);
    if (moved) memcpy(moved, pointer, old < size ? old : size);
    return moved;
}

#endif /* SHOAL_OCEAN_ARENA_H */
