// shoal/rounds.hpp — one fork-join round of the worker pool: how its items are cut and claimed.
//
// Rule (late workers and claims). A worker may validate round r and then be descheduled for
// arbitrarily long while the caller finishes r and publishes later rounds. It can still only
// claim via claim(), which requires the word's tag to be r (chunks left) or older than r
// (first touch in r). Round r ends only after the caller has claimed every remaining chunk of
// every slice of r, which leaves each of those words tagged r or later and empty. So a claim
// that succeeds is a genuine chunk of round r, and round r cannot have ended: the caller waits
// for its items. Tags are round numbers mod 2^36; confusing them would need one worker to stall
// for 2^35 rounds.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shoal/detail/sync.hpp"

namespace shoal {

/// How the items of a round are split among participants.
enum class Schedule : uint8_t {
    Static,   ///< one contiguous slice per participant (caller = 0); idle participants steal the rest
    Dynamic,  ///< many equal chunks handed out from one counter (envs of uneven cost)
};

namespace detail {

/// Sub-chunks per static slice: the granularity at which a missing participant's slice is shared.
inline constexpr size_t kSubChunksPerSlice = 16;
/// Dynamic auto chunking: this many chunks per participant.
inline constexpr size_t kDynamicChunksPerParticipant = 8;

/// A round's body: body(context, begin, end) over items [begin, end).
using RoundBody = void (*)(void* context, size_t begin, size_t end);

/// What a participant needs to know about one round (read once, validated by the seqlock).
struct Round {
    uint64_t tag = 0;
    RoundBody body = nullptr;
    void* context = nullptr;
    size_t num_items = 0;
    size_t slices = 0;       // Static: number of slices
    size_t chunk_items = 0;  // Dynamic: items per chunk
    Schedule schedule = Schedule::Static;
};

/// What one participant did in one round.
struct Participation {
    size_t done = 0;  // items
    uint64_t chunks = 0, steals = 0;
    bool late = false;  // a worker that found its own slice already taken
};

/// A claim word alone on its cache line (one per static slice; one for the dynamic counter).
struct alignas(detail::kCacheLine) ClaimSlot {
    std::atomic<uint64_t> word{0};
};

/// The round `number` of `num_items` items among `participants` threads: how they are cut.
[[nodiscard]] inline Round plan_round(uint64_t number, size_t num_items, size_t participants, Schedule schedule,
                                      size_t dynamic_chunk, RoundBody body, void* context) noexcept {
    Round round;
    round.tag = number & kTagMask;
    round.body = body;
    round.context = context;
    round.num_items = num_items;
    round.schedule = schedule;
    if (round.schedule == Schedule::Static) {
        round.slices = std::min(num_items, participants);
    } else {
        size_t chunk = dynamic_chunk;
        if (chunk == 0) {
            const size_t target = participants * kDynamicChunksPerParticipant;
            chunk = (num_items + target - 1) / target;
        }
        round.chunk_items = std::max(chunk, (num_items + kMaxChunksPerWord - 1) / kMaxChunksPerWord);
    }
    return round;
}

/// Claims and runs chunks of `round` as participant `p` (0 = the caller) until none is left,
/// calling run_chunk(round, begin, end) on each. Static: own slice from the front first, then the
/// other slices from the back (stealing). `slots`: one claim word per static slice.
template <class RunChunk>
void participate(const Round& round, size_t p, ClaimSlot* slots, ClaimSlot& dynamic, Participation& out,
                 RunChunk&& run_chunk) noexcept {
    const FirstTouch first_touch = p == 0 ? FirstTouch::Always : FirstTouch::IfOlder;
    if (round.schedule == Schedule::Dynamic) {
        const size_t count = (round.num_items + round.chunk_items - 1) / round.chunk_items;
        for (int64_t c; (c = claim(dynamic.word, round.tag, count, false, first_touch)) >= 0;) {
            const size_t begin = static_cast<size_t>(c) * round.chunk_items;
            const size_t end = std::min(round.num_items, begin + round.chunk_items);
            run_chunk(round, begin, end);
            out.done += end - begin;
            ++out.chunks;
        }
        return;
    }
    const size_t slices = round.slices;
    const size_t base = round.num_items / slices, extra = round.num_items % slices;
    const auto drain = [&](size_t j, bool from_back) {
        const size_t begin = j * base + std::min(j, extra);
        const size_t length = base + (j < extra ? 1 : 0);
        const size_t subs = std::min(length, kSubChunksPerSlice);
        size_t taken = 0;
        // The owner takes half of what is left of its slice at a time (8, 4, 2, 1, 1 of 16
        // sub-chunks), each run as one range; thieves take one sub-chunk at a time from the back.
        const Take take = from_back ? Take::Back : Take::FrontHalf;
        uint64_t run = 0;
        for (int64_t sub; (sub = claim_run(slots[j].word, round.tag, subs, take, first_touch, &run)) >= 0;) {
            const size_t s = static_cast<size_t>(sub);
            const size_t sub_begin = begin + length * s / subs;
            const size_t sub_end = begin + length * (s + run) / subs;
            run_chunk(round, sub_begin, sub_end);
            out.done += sub_end - sub_begin;
            ++taken;
        }
        out.chunks += taken;
        return taken;
    };
    if (p < slices && drain(p, false) == 0 && p != 0) out.late = true;
    for (size_t k = 1; k <= slices; ++k) {
        // The caller walks the slices backwards (the highest workers start last); worker p goes
        // forward from its own slice, so thieves spread over different victims.
        const size_t j = p == 0 ? slices - k : (p + k) % slices;
        if (j != p) out.steals += drain(j, true);
    }
}

}  // namespace detail
}  // namespace shoal
