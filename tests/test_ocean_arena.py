"""The init arena of an Ocean env (csrc/include/shoal_ocean_arena.h), compiled as the envs compile it and
driven by a small C program: where allocations land and how much it reserves for them."""

import subprocess

import pytest

import shoal
from shoal.native.builds import compiler
from shoal.ocean.build import CSRC

PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <shoal/env.h>
#include "shoal_ocean_runtime.h"
static shoal_env* shoal_ocean_env_of_rand_state(uint64_t* s) { (void)s; return 0; }
#include "shoal_ocean_arena.h"
static shoal_ocean_arena* shoal_ocean_arena_of(shoal_env* env) { (void)env; return 0; }

/* Allocates the sizes given as arguments while the arena is being filled (as in my_init); prints the
 * arena's reserved bytes, then per allocation its address, size, the start of the block holding it
 * (0: libc's) and whether its bytes are zero. */
int main(int argc, char** argv) {
    shoal_ocean_arena arena = {0};
    shoal_ocean__filling = &arena;
    void* pointers[256];
    const int count = argc - 1 < 256 ? argc - 1 : 256;
    for (int i = 0; i < count; ++i) pointers[i] = shoal_ocean_calloc(1, (size_t)atol(argv[i + 1]));
    shoal_ocean__filling = NULL;
    printf("%zu\n", arena.reserved);
    for (int i = 0; i < count; ++i) {
        const unsigned char* p = (const unsigned char*)pointers[i];
        const size_t size = (size_t)atol(argv[i + 1]);
        uintptr_t block_start = 0;
        for (const shoal_ocean_arena_block* b = arena.blocks; b; b = b->next)
            if (p >= b->data && p < b->data + b->capacity) block_start = (uintptr_t)b->data;
        int zero = 1;
        for (size_t k = 0; k < size; ++k) zero &= p[k] == 0;
        printf("%ju %zu %ju %d\n", (uintmax_t)(uintptr_t)p, size, (uintmax_t)block_start, zero);
    }
    shoal_ocean__filling = &arena; /* my_init frees its own allocations: arena memory stays, libc's goes */
    for (int i = 0; i < count; ++i) shoal_ocean_free(pointers[i]);
    shoal_ocean__filling = NULL;
    shoal_ocean_arena_release(&arena);
    return 0;
}
"""
HEADER = 16  # shoal_ocean_arena_header: each allocation's size, in front of it


@pytest.fixture(scope="module")
def arena_program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arena")
    source, program = folder / "arena.c", folder / "arena"
    source.write_text(PROGRAM)
    include = [f"-I{CSRC / 'include'}", f"-I{shoal.get_include()}"]
    subprocess.run([compiler(), "-O2", "-std=gnu11", *include, str(source), "-o", str(program)], check=True)

    def fill(sizes):
        out = subprocess.run([str(program), *map(str, sizes)], capture_output=True, text=True, check=True).stdout
        lines = out.splitlines()
        rows = [tuple(int(v) for v in line.split()) for line in lines[1:]]
        return int(lines[0]), rows

    return fill


def _padded(size):
    return HEADER + (size + 15) // 16 * 16


def test_a_large_array_does_not_strand_the_small_ones_after_it(arena_program):
    """tower_climb's my_init: a Level, a PuzzleState, a 4,000-byte map, then the 125-byte block bitmap its
    step tests on every move. The bitmap stays beside the first two, and the arena reserves no more than
    its first block and the map's own (it used to open an empty 8 KiB block for the bitmap: three times
    the env's memory, and the step's hottest load missed twice as often)."""
    sizes = [48, 32, 4000, 125]
    reserved, rows = arena_program(sizes)
    blocks = [block for _, _, block, _ in rows]
    assert all(blocks), "every allocation comes from the arena"
    assert blocks[0] == blocks[1] == blocks[3] != blocks[2]
    assert reserved <= 1024 + _padded(4000)


def test_allocations_are_aligned_zeroed_disjoint_and_grow_geometrically(arena_program):
    sizes = [1, 100, 3000, 7, 700, 5000, 16, 33, 64, 2000, 1] + [100] * 200
    reserved, rows = arena_program(sizes)
    assert all(block for _, _, block, _ in rows)
    assert all(address % 16 == 0 for address, _, _, _ in rows)
    assert all(zero for *_, zero in rows)
    spans = sorted((address, address + size) for address, size, _, _ in rows)
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))
    used = sum(_padded(size) for size in sizes)
    assert reserved < 2 * used + 1024  # blocks double, and a large allocation's own block is exact


def test_an_allocation_over_half_the_largest_block_goes_to_libc(arena_program):
    reserved, rows = arena_program([64, 600 * 1024, 64])
    assert [block != 0 for _, _, block, _ in rows] == [True, False, True]
    assert rows[1][3] == 1  # zeroed all the same
    assert reserved < 600 * 1024
