"""Reserved beside allocated: a trace's allocation stream replayed through PyTorch's CUDA caching allocator's rules.

The rules are c10/cuda/CUDACachingAllocator.cpp's (pytorch/pytorch, read at commit 001074d25084); each function
below names the one it follows. Simulated: 512 B rounding, the small (≤ 1 MiB) and large pools, segment sizes
(2 MiB, 20 MiB, or the request rounded to 2 MiB), best-fit search, splitting, coalescing on free, releasing cached
whole segments and retrying when a `capacity_bytes` device would be exceeded, and expandable_segments (one growing
segment per pool, mapped in 2 MiB pages for the small pool and 20 MiB pages for the large).
Not simulated: streams (one stream, so a freed block is reusable at once: no recordStream events), CUDA graph
private pools, max_split_size_mb and roundup_power2_divisions (their defaults, "unlimited" and 0, make their rules
no-ops), garbage_collection_threshold, empty_cache() called by the program.

Replay order (backend/trace/memory.py's lifetimes: a storage counts from `born` through `freed`): at step s the
storages whose release point is s (freed = s - 1) are freed first, then those born at s are allocated, each group in
storage-id order; the numbers of step s are read after both. A zero-byte storage never reaches the allocator
(NativeCachingAllocator::allocate calls malloc only when size != 0).
"""
import bisect

import numpy as np

from backend.trace.memory import lifetimes_of, live_bytes, release_point

K_MIN_BLOCK_SIZE = 512                 # kMinBlockSize: "all sizes are rounded to at least 512 bytes"
K_SMALL_SIZE = 1 << 20                 # kSmallSize: "largest 'small' allocation is 1 MiB"
K_SMALL_BUFFER = 2 << 20               # kSmallBuffer: "'small' allocations are packed in 2 MiB blocks"
K_LARGE_BUFFER = 20 << 20              # kLargeBuffer: "'large' allocations may be packed in 20 MiB blocks"
K_MIN_LARGE_ALLOC = 10 << 20           # kMinLargeAlloc: "allocations between 1 and 10 MiB may use kLargeBuffer"
K_ROUND_LARGE = 2 << 20                # kRoundLarge: "round up large allocations to 2 MiB"
UNLIMITED_ADDRESS_SPACE = 1 << 48      # an expandable segment's virtual range when no device capacity is given


class OutOfMemory(Exception):
    """The request the simulated device could not hold even after releasing every cached segment."""


def round_size(nbytes):
    """round_size(): below kMinBlockSize → 512; otherwise up to a multiple of 512 (roundup_power2_divisions off)."""
    if nbytes < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    return K_MIN_BLOCK_SIZE * ((nbytes + K_MIN_BLOCK_SIZE - 1) // K_MIN_BLOCK_SIZE)


def is_small(size):
    """get_pool(): a rounded size ≤ kSmallSize is served by the small pool, anything larger by the large one."""
    return size <= K_SMALL_SIZE


def allocation_size(size):
    """get_allocation_size(): the segment cudaMalloc'd for a rounded request no cached block fits."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) // K_ROUND_LARGE)


class Block:
    """struct Block: a piece of a segment, in address order with its neighbours (prev, next)."""
    __slots__ = ("ptr", "size", "small", "allocated", "mapped", "prev", "next", "segment")

    def __init__(self, ptr, size, small, segment=None, mapped=True):
        self.ptr, self.size, self.small, self.segment, self.mapped = ptr, size, small, segment, mapped
        self.allocated, self.prev, self.next = False, None, None

    def key(self):
        return (self.size, self.ptr)     # BlockComparatorSize within one stream: size, then address


class ExpandableSegment:
    """struct ExpandableSegment: a virtual range mapped page by page (2 MiB small pool, 20 MiB large pool)."""
    __slots__ = ("base", "page", "size")

    def __init__(self, base, page, size):
        self.base, self.page, self.size = base, page, size


class Pool:
    """struct BlockPool: the cached free blocks, by (size, address); the unmapped ones of expandable segments."""

    def __init__(self, small):
        self.small = small
        self.keys, self.blocks = [], []      # sorted (size, ptr) and their blocks, side by side
        self.unmapped = {}                    # ptr -> unmapped block (address order when searched)

    def insert(self, block):
        i = bisect.bisect_left(self.keys, block.key())
        self.keys.insert(i, block.key())
        self.blocks.insert(i, block)

    def erase(self, block):
        i = bisect.bisect_left(self.keys, block.key())
        assert self.blocks[i] is block
        del self.keys[i], self.blocks[i]

    def lower_bound(self, size):
        return bisect.bisect_left(self.keys, (size, -1))


class CachingAllocator:
    """DeviceCachingAllocator on one device and one stream: malloc(nbytes) → block, free(block); `reserved_bytes`
    (what torch.cuda.memory_reserved() reports) and `allocated_bytes` (memory_allocated(): rounded block sizes)."""

    def __init__(self, expandable_segments=False, capacity_bytes=None):
        self.expandable_segments = expandable_segments
        self.capacity_bytes = capacity_bytes
        self.small_pool, self.large_pool = Pool(True), Pool(False)
        self.reserved_bytes = 0              # total_allocated_memory / stats.reserved_bytes
        self.allocated_bytes = 0
        self.segments_made = 0               # cudaMalloc calls and expandable segments created
        self.segments_released = 0           # cudaFree calls (release_block) and segments unmapped to nothing
        self._next_base = K_ROUND_LARGE

    # ---------------------------------------------------------------- the public calls
    def malloc(self, nbytes):
        """malloc(): round, pick the pool, best-fit a cached block, else a new segment (after releasing cached
        segments and retrying if the device is full); split off what is left over."""
        size = round_size(nbytes)
        pool = self.small_pool if is_small(size) else self.large_pool
        block = self._get_free_block(pool, size)
        if block is None:
            # alloc_block(), then release_cached_blocks() and alloc_block() again (release_available_cached_blocks
            # returns false while max_split_size is unlimited, its default)
            block = self._alloc_block(pool, size)
            if block is None:
                self.release_cached_blocks()
                block = self._alloc_block(pool, size)
            if block is None:
                raise OutOfMemory(f"tried to allocate {allocation_size(size):,} B with {self.reserved_bytes:,} B "
                                  f"reserved ({self.allocated_bytes:,} B allocated) of {self.capacity_bytes:,} B")
        return self._alloc_found_block(pool, block, size, self._should_split(block, size))

    def free(self, block):
        """free() → free_block(): the block returns to its pool, merged with free neighbours in its segment."""
        block.allocated = False
        self.allocated_bytes -= block.size
        pool = self._pool_of(block)
        for neighbour in (block.prev, block.next):
            self._try_merge_blocks(block, neighbour, pool)
        pool.insert(block)

    def largest_free_bytes(self):
        """cacheInfo(): the largest cached (mapped, free) block of either pool."""
        return max((b.size for pool in (self.small_pool, self.large_pool) for b in pool.blocks[-1:]), default=0)

    def release_cached_blocks(self):
        """release_cached_blocks() → release_blocks(large), release_blocks(small): every free block that is a whole
        segment is cudaFree'd; the free pages of expandable segments are unmapped."""
        for pool in (self.large_pool, self.small_pool):
            to_unmap = []
            for block in list(pool.blocks):
                if block.segment is not None:
                    to_unmap.append(block)
                elif block.prev is None and block.next is None:
                    self._release_block(pool, block)
            for block in to_unmap:
                self._unmap_block(pool, block)
                if block.prev is None and block.next is None:      # release_expandable_segment()
                    del pool.unmapped[block.ptr]
                    self.segments_released += 1

    # ---------------------------------------------------------------- the rules
    def _pool_of(self, block):
        return self.small_pool if block.small else self.large_pool

    def _should_split(self, block, size):
        """should_split(): the small pool (or any pool with expandable segments) splits when ≥ kMinBlockSize is
        left; the large pool only when more than kSmallSize is left (max_split_size unlimited)."""
        remaining = block.size - size
        if block.small or self.expandable_segments:
            return remaining >= K_MIN_BLOCK_SIZE
        return remaining > K_SMALL_SIZE

    def _get_free_block(self, pool, size):
        """get_free_block(): the smallest cached block ≥ size (lowest address among equals); with expandable
        segments, a block followed by unmapped space is weighed by the size it can grow to."""
        i = pool.lower_bound(size)
        if i == len(pool.blocks):
            return None
        if pool.blocks[i].segment is not None and self.expandable_segments:
            def expandable_size(b):
                return b.size + (b.next.size if b.next is not None and not b.next.mapped else 0)
            while (pool.blocks[i].segment is not None and i + 1 < len(pool.blocks)
                   and expandable_size(pool.blocks[i + 1]) < expandable_size(pool.blocks[i])):
                i += 1
        block = pool.blocks[i]
        del pool.keys[i], pool.blocks[i]
        return block

    def _fits(self, nbytes):
        return self.capacity_bytes is None or self.reserved_bytes + nbytes <= self.capacity_bytes

    def _alloc_block(self, pool, size):
        """alloc_block(): a new segment of get_allocation_size(size) (cudaMalloc), or with expandable segments
        try_allocate_expandable_block(size); None when the device cannot hold it."""
        if self.expandable_segments:
            return self._try_allocate_expandable_block(pool, size)
        segment_bytes = allocation_size(size)
        if not self._fits(segment_bytes):
            return None
        self.reserved_bytes += segment_bytes
        self.segments_made += 1
        return Block(self._new_address(segment_bytes), segment_bytes, pool.small)

    def _alloc_found_block(self, pool, block, size, split):
        """alloc_found_block(): a split leaves the block's tail (remaining) in the pool, the head is handed out."""
        if split:
            remaining = block
            block = Block(remaining.ptr, size, pool.small, remaining.segment)
            block.prev, block.next = remaining.prev, remaining
            if block.prev is not None:
                block.prev.next = block
            remaining.prev = block
            remaining.ptr += size
            remaining.size -= size
            pool.insert(remaining)
        block.allocated = True
        self.allocated_bytes += block.size
        return block

    def _try_merge_blocks(self, dst, src, pool):
        """try_merge_blocks(): a free neighbour in the same mapped state is absorbed into dst."""
        if src is None or src.allocated or dst.mapped != src.mapped:
            return 0
        if src.mapped:
            pool.erase(src)
        else:
            del pool.unmapped[src.ptr]
        if dst.prev is src:                  # [src dst]
            dst.ptr = src.ptr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:                                # [dst src]
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    def _release_block(self, pool, block):
        """release_block(): cudaFree of a whole cached segment; reserved drops by its size."""
        pool.erase(block)
        self.reserved_bytes -= block.size
        self.segments_released += 1

    # ---------------------------------------------------------------- expandable segments
    def _find_expandable_block(self, pool, size):
        """find_expandable_block(): the lowest-addressed unmapped block (or the free block just before it) with
        enough free-then-unmapped room behind it; else a new segment, one unmapped block over its whole range."""
        def allocatable(b):
            return b is not None and not b.allocated

        def has_room(b):
            room = 0
            while room < size and allocatable(b):
                room += b.size
                b = b.next
            return room >= size
        for ptr in sorted(pool.unmapped):
            c = pool.unmapped[ptr]
            if allocatable(c.prev):
                c = c.prev
            if has_room(c):
                return c
        page = K_SMALL_BUFFER if pool.small else K_LARGE_BUFFER    # "2MB for small pool, 20MB for large pool"
        # "we allocate enough address space for 1 1/8 the total memory on the GPU", in whole pages
        span = UNLIMITED_ADDRESS_SPACE if self.capacity_bytes is None else self.capacity_bytes * 9 // 8
        span = -(-span // page) * page
        segment = ExpandableSegment(self._new_address(span), page, span)
        self.segments_made += 1
        candidate = Block(segment.base, span, pool.small, segment, mapped=False)
        pool.unmapped[candidate.ptr] = candidate
        return candidate

    def _map_block(self, pool, to_map, size):
        """map_block(): map whole pages from to_map's start to cover size (ExpandableSegment::map rounds the end up
        to a page); the mapped head joins its free neighbours, the rest stays unmapped. False when it cannot fit."""
        segment = to_map.segment
        begin = (to_map.ptr - segment.base) // segment.page
        end = -(-(to_map.ptr + size - segment.base) // segment.page)
        mapped = (end - begin) * segment.page
        if not self._fits(mapped):
            return False
        del pool.unmapped[to_map.ptr]
        to_map.mapped = True
        if mapped < to_map.size:
            remaining = Block(to_map.ptr + mapped, to_map.size - mapped, pool.small, segment, mapped=False)
            remaining.prev, remaining.next = to_map, to_map.next
            if to_map.next is not None:
                to_map.next.prev = remaining
            to_map.next = remaining
            pool.unmapped[remaining.ptr] = remaining
            to_map.size = mapped
        self._try_merge_blocks(to_map, to_map.prev, pool)
        self._try_merge_blocks(to_map, to_map.next, pool)
        pool.insert(to_map)
        self.reserved_bytes += mapped
        return True

    def _try_allocate_expandable_block(self, pool, size):
        """try_allocate_expandable_block(): map pages behind the candidate until it holds size bytes."""
        candidate = self._find_expandable_block(pool, size)
        if not candidate.mapped and not self._map_block(pool, candidate, min(candidate.size, size)):
            return None
        while candidate.size < size:
            following = candidate.next
            if not self._map_block(pool, following, min(size - candidate.size, following.size)):
                return None
            candidate = following           # map_block merged the free candidate into it
        pool.erase(candidate)
        return candidate

    def _unmap_block(self, pool, block):
        """unmap_block(): the whole pages inside a free block are unmapped (reserved drops by them); the partial
        pages at either end stay mapped as free blocks."""
        segment = block.segment
        begin = -(-(block.ptr - segment.base) // segment.page)
        end = (block.ptr + block.size - segment.base) // segment.page
        if begin >= end:
            return
        pool.erase(block)
        start, length = segment.base + begin * segment.page, (end - begin) * segment.page
        before, after = start - block.ptr, block.size - (start - block.ptr) - length
        if before > 0:
            head = Block(block.ptr, before, pool.small, segment)
            head.prev, head.next = block.prev, block
            if block.prev is not None:
                block.prev.next = head
            block.prev = head
            pool.insert(head)
        if after > 0:
            tail = Block(start + length, after, pool.small, segment)
            tail.prev, tail.next = block, block.next
            if block.next is not None:
                block.next.prev = tail
            block.next = tail
            pool.insert(tail)
        block.ptr, block.size, block.mapped = start, length, False
        self._try_merge_blocks(block, block.prev, pool)
        self._try_merge_blocks(block, block.next, pool)
        pool.unmapped[block.ptr] = block
        self.reserved_bytes -= length

    def _new_address(self, nbytes):
        """A fresh address range, 2 MiB aligned, never touching another segment's (as cudaMalloc's are distinct)."""
        base = self._next_base
        self._next_base += (-(-nbytes // K_ROUND_LARGE) + 1) * K_ROUND_LARGE
        return base

def replay(storages, n_steps, expandable_segments=False, capacity_bytes=None):
    """Storage records (born, freed, nbytes, id) replayed step by step through the caching allocator: a dict of
    int64 arrays over the n_steps steps — requested (the storages' own bytes, the document's live_bytes),
    allocated (their rounded blocks: memory_allocated), reserved (memory_reserved), inactive (reserved −
    allocated: cached, not in use) and largest_free (the largest cached block) — plus the segment counts.
    OutOfMemory when capacity_bytes is given and the stream cannot fit."""
    born, released = {}, {}
    for s in sorted(storages, key=lambda s: s["id"]):
        if s["nbytes"] <= 0:
            continue
        born.setdefault(s["born"], []).append(s)
        if release_point(s["freed"], n_steps) < n_steps:
            released.setdefault(release_point(s["freed"], n_steps), []).append(s)
    allocator = CachingAllocator(expandable_segments, capacity_bytes)
    series = {"requested": live_bytes(lifetimes_of(storages), n_steps),
              **{name: np.zeros(n_steps, dtype=np.int64) for name in ("allocated", "reserved", "inactive", "largest_free")}}
    blocks = {}
    for step in range(n_steps):
        for s in released.get(step, ()):
            allocator.free(blocks.pop(s["id"]))
        for s in born.get(step, ()):
            blocks[s["id"]] = allocator.malloc(s["nbytes"])
        series["allocated"][step] = allocator.allocated_bytes
        series["reserved"][step] = allocator.reserved_bytes
        series["inactive"][step] = allocator.reserved_bytes - allocator.allocated_bytes
        series["largest_free"][step] = allocator.largest_free_bytes()
    series["segments_made"] = allocator.segments_made
    series["segments_released"] = allocator.segments_released
    return series


def storage_records(document):
    """A document's storages as records, whether it is the expanded form (a list) or a table of columns."""
    storages = document["storages"]
    if isinstance(storages, dict) and "columns" in storages:
        columns = storages["columns"]
        return [dict(zip(columns, row)) for row in zip(*(columns[name] for name in columns))]
    return storages


def attach_reserved(document, expandable_segments=False, capacity_bytes=None):
    """Add the allocator's numbers to an expanded-form document in place: every step's reserved_bytes, and in
    the summary reserved_peak_bytes, reserved_peak_step and `allocator` (its rules and peaks); returns it."""
    steps = document["steps"]
    series = replay(storage_records(document), len(steps), expandable_segments, capacity_bytes)
    for step in steps:
        step["reserved_bytes"] = int(series["reserved"][step["index"]])
    reserved_step = int(np.argmax(series["reserved"]))
    allocated_step = int(np.argmax(series["allocated"]))
    summary = document["summary"]
    summary["reserved_peak_bytes"] = int(series["reserved"][reserved_step])
    summary["reserved_peak_step"] = reserved_step
    summary["allocator"] = {
        "rules": "cuda",
        "expandable_segments": bool(expandable_segments),
        "allocated_peak_bytes": int(series["allocated"][allocated_step]),
        "allocated_peak_step": allocated_step,
        "inactive_at_reserved_peak_bytes": int(series["inactive"][reserved_step]),
        "largest_free_at_reserved_peak_bytes": int(series["largest_free"][reserved_step]),
        "segments_made": int(series["segments_made"]),
    }
    return document
