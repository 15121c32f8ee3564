"""The CUDA caching allocator simulator on hand-worked sequences: each expected number is worked out beside it from
c10/cuda/CUDACachingAllocator.cpp's rules (backend/trace/cuda_allocator.py cites each)."""
import json
from pathlib import Path

import numpy as np
import pytest

from backend.trace.cuda_allocator import (CachingAllocator, OutOfMemory, allocation_size, attach_reserved, replay,
                                          round_size)

KiB, MiB = 1 << 10, 1 << 20
ROOT = Path(__file__).resolve().parents[2]


def test_sizes_round_up_to_512_bytes_and_pick_the_pool():
    # round_size: < 512 → 512; else the next multiple of 512
    assert [round_size(n) for n in (1, 511, 512, 513, 1025)] == [512, 512, 512, 1024, 1536]
    # get_allocation_size: ≤ 1 MiB → a 2 MiB segment; < 10 MiB → 20 MiB; else rounded up to 2 MiB
    assert allocation_size(1 * MiB) == 2 * MiB
    assert allocation_size(round_size(MiB + 1)) == 20 * MiB
    assert allocation_size(10 * MiB) == 10 * MiB and allocation_size(11 * MiB) == 12 * MiB

    allocator = CachingAllocator()
    one = allocator.malloc(1)
    # 1 B is a 512 B block cut from a new 2 MiB small-pool segment
    assert (one.size, one.small, allocator.allocated_bytes, allocator.reserved_bytes) == (512, True, 512, 2 * MiB)
    big = allocator.malloc(MiB + 1)
    # 1 MiB + 1 rounds to 1 MiB + 512 > kSmallSize: the large pool, a 20 MiB segment; 2 MiB + 20 MiB reserved
    assert (big.size, big.small) == (MiB + 512, False)
    assert allocator.reserved_bytes == 22 * MiB and allocator.allocated_bytes == 512 + MiB + 512


def test_small_blocks_share_one_2_mib_segment():
    allocator = CachingAllocator()
    blocks = [allocator.malloc(KiB) for _ in range(2048)]
    # 2048 × 1 KiB = 2 MiB: each split leaves ≥ 512 B until the last, which takes the final 1 KiB whole
    assert allocator.reserved_bytes == 2 * MiB and allocator.segments_made == 1
    assert allocator.allocated_bytes == 2 * MiB and allocator.largest_free_bytes() == 0
    allocator.malloc(KiB)
    # the 2049th finds no cached block: a second 2 MiB segment
    assert allocator.reserved_bytes == 4 * MiB and allocator.segments_made == 2
    for block in blocks:
        allocator.free(block)
    # freed neighbours coalesce: the first segment is one 2 MiB free block again; nothing is given back
    assert allocator.reserved_bytes == 4 * MiB and allocator.largest_free_bytes() == 2 * MiB


def test_a_12_mib_request_gets_its_own_segment_a_5_mib_one_shares_20_mib():
    allocator = CachingAllocator()
    allocator.malloc(12 * MiB)
    # ≥ kMinLargeAlloc (10 MiB): its own segment of 12 MiB (a multiple of 2 MiB), nothing left to split
    assert allocator.reserved_bytes == 12 * MiB and allocator.largest_free_bytes() == 0
    allocator.malloc(5 * MiB)
    # < 10 MiB: a 20 MiB segment, split (15 MiB left > 1 MiB): 12 + 20 = 32 MiB reserved
    assert allocator.reserved_bytes == 32 * MiB and allocator.largest_free_bytes() == 15 * MiB
    allocator.malloc(5 * MiB)
    # best fit: the 15 MiB free block, split again (10 MiB left)
    assert allocator.reserved_bytes == 32 * MiB and allocator.largest_free_bytes() == 10 * MiB
    allocator.malloc(12 * MiB)
    # 10 MiB free cannot hold 12 MiB: a new 12 MiB segment, 44 MiB reserved, 34 MiB allocated
    assert allocator.reserved_bytes == 44 * MiB and allocator.allocated_bytes == 34 * MiB


def test_large_blocks_split_only_when_more_than_1_mib_is_left():
    allocator = CachingAllocator()
    block = allocator.malloc(19 * MiB + 512 * KiB)
    # 19.5 MiB ≥ 10 MiB: its own segment rounded up to 20 MiB; 512 KiB left ≤ kSmallSize, so no split:
    # the whole 20 MiB is the block, and allocated counts it (memory_allocated reports block sizes)
    assert block.size == 20 * MiB and allocator.allocated_bytes == 20 * MiB
    allocator.free(block)
    again = allocator.malloc(19 * MiB)
    # best fit finds the cached 20 MiB block; 1 MiB left is not > 1 MiB: handed out whole, nothing new reserved
    assert again.size == 20 * MiB and allocator.reserved_bytes == 20 * MiB


def test_splitting_and_coalescing_within_a_segment():
    allocator = CachingAllocator()
    a, b, c = (allocator.malloc(4 * MiB) for _ in range(3))
    # one 20 MiB segment: [a 4][b 4][c 4][free 8]
    assert allocator.reserved_bytes == 20 * MiB and allocator.largest_free_bytes() == 8 * MiB
    assert (b.ptr - a.ptr, c.ptr - b.ptr) == (4 * MiB, 4 * MiB)
    allocator.free(b)
    # [a 4][free 4][c 4][free 8]: two free blocks, not neighbours
    assert sorted(blk.size for blk in allocator.large_pool.blocks) == [4 * MiB, 8 * MiB]
    allocator.free(a)
    # a merges with b: [free 8][c 4][free 8]
    assert sorted(blk.size for blk in allocator.large_pool.blocks) == [8 * MiB, 8 * MiB]
    allocator.free(c)
    # c merges with both: the segment is one 20 MiB free block; reserved stays 20 MiB
    assert [blk.size for blk in allocator.large_pool.blocks] == [20 * MiB]
    assert allocator.reserved_bytes == 20 * MiB and allocator.allocated_bytes == 0
    allocator.malloc(18 * MiB)
    # ≥ 10 MiB, but a cached block fits: taken from the 20 MiB block, 2 MiB left > 1 MiB is split off
    assert allocator.reserved_bytes == 20 * MiB and allocator.largest_free_bytes() == 2 * MiB


def test_a_freed_middle_block_fragments_the_segment():
    allocator = CachingAllocator()
    a, b, c = (allocator.malloc(6 * MiB) for _ in range(3))
    allocator.free(b)
    # [a 6][free 6][c 6][free 2]: reserved 20 MiB, allocated 12 MiB, 8 MiB cached in two pieces, largest 6 MiB
    assert (allocator.reserved_bytes, allocator.allocated_bytes) == (20 * MiB, 12 * MiB)
    assert allocator.largest_free_bytes() == 6 * MiB
    allocator.malloc(7 * MiB)
    # 8 MiB are free but no one block holds 7 MiB: a second 20 MiB segment
    assert allocator.reserved_bytes == 40 * MiB and allocator.segments_made == 2


def test_expandable_segments_grow_in_pages_instead_of_new_segments():
    # the growing-batch case of Note [Expandable Segments]: 12 MiB freed, then 14 MiB asked for
    plain = CachingAllocator()
    plain.free(plain.malloc(12 * MiB))
    plain.malloc(14 * MiB)
    # off: the cached 12 MiB segment cannot hold 14 MiB: a second segment, 12 + 14 = 26 MiB reserved
    assert plain.reserved_bytes == 26 * MiB and plain.segments_made == 2

    grown = CachingAllocator(expandable_segments=True)
    first = grown.malloc(12 * MiB)
    # on: one large-pool segment mapped in 20 MiB pages; 12 MiB maps one page, 8 MiB of it free (split ≥ 512 B)
    assert grown.reserved_bytes == 20 * MiB and grown.largest_free_bytes() == 8 * MiB
    grown.free(first)
    grown.malloc(14 * MiB)
    # the freed 12 MiB merged back into the 20 MiB page: 14 MiB fits, nothing more mapped
    assert grown.reserved_bytes == 20 * MiB and grown.segments_made == 1
    grown.malloc(10 * MiB)
    # 6 MiB free at the end, followed by unmapped space: map one more page (4 MiB short → 20 MiB), 40 MiB reserved,
    # and the new page merges with the free 6 MiB: 26 MiB, of which 10 MiB taken, 16 MiB free
    assert grown.reserved_bytes == 40 * MiB and grown.largest_free_bytes() == 16 * MiB
    assert grown.segments_made == 1


def test_expandable_small_pool_maps_2_mib_pages():
    allocator = CachingAllocator(expandable_segments=True)
    blocks = [allocator.malloc(512 * KiB) for _ in range(5)]
    # 5 × 512 KiB = 2.5 MiB in the small pool's one expandable segment: two 2 MiB pages
    assert allocator.reserved_bytes == 4 * MiB and allocator.segments_made == 1
    for block in blocks:
        allocator.free(block)
    allocator.release_cached_blocks()
    # unmapping the free whole pages gives all 4 MiB back, and the empty segment goes
    assert allocator.reserved_bytes == 0 and not allocator.small_pool.unmapped


def test_a_full_device_releases_cached_segments_and_retries():
    allocator = CachingAllocator(capacity_bytes=40 * MiB)
    allocator.free(allocator.malloc(12 * MiB))
    allocator.malloc(30 * MiB)
    # 12 MiB cached + a new 30 MiB segment > 40 MiB: release_cached_blocks frees the unsplit 12 MiB, the retry fits
    assert allocator.reserved_bytes == 30 * MiB and allocator.segments_released == 1
    with pytest.raises(OutOfMemory):
        allocator.malloc(12 * MiB)       # 30 MiB in use + 12 MiB > 40 MiB with nothing cached to release


def test_replay_frees_before_it_allocates_within_a_step():
    storages = [{"id": 0, "born": 0, "freed": 1, "nbytes": 5 * MiB},
                {"id": 1, "born": 2, "freed": None, "nbytes": 5 * MiB},
                {"id": 2, "born": 2, "freed": 2, "nbytes": 16 * MiB},
                {"id": 3, "born": 1, "freed": None, "nbytes": 0}]
    series = replay(storages, 4)
    # step 0: 5 MiB from a new 20 MiB segment (15 MiB split off); step 1: unchanged (the zero-byte storage never
    # reaches the allocator); step 2: storage 0 released first (freed at 1: the segment is one 20 MiB block
    # again), storage 1 takes its head (15 MiB left), storage 2's 16 MiB fits no cached block: its own 16 MiB
    # segment, 36 MiB reserved; step 3: storage 2 released, its 16 MiB segment stays cached: 31 MiB inactive
    assert series["requested"].tolist() == [5 * MiB, 5 * MiB, 21 * MiB, 5 * MiB]
    assert series["allocated"].tolist() == [5 * MiB, 5 * MiB, 21 * MiB, 5 * MiB]
    assert series["reserved"].tolist() == [20 * MiB, 20 * MiB, 36 * MiB, 36 * MiB]
    assert series["inactive"].tolist() == [15 * MiB, 15 * MiB, 15 * MiB, 31 * MiB]
    assert series["largest_free"].tolist() == [15 * MiB, 15 * MiB, 15 * MiB, 16 * MiB]


def test_a_recorded_document_reserves_at_least_what_it_allocates():
    pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
    from backend.importers.torch_step import load_build, record_step, step_of
    document = record_step(*step_of(load_build(ROOT / "examples" / "torch" / "mlp.py")))
    live = np.array([step["live_bytes"] for step in document["steps"]])
    # the replay frees and allocates by the same lifetimes the document counts live bytes by
    assert replay(document["storages"], len(document["steps"]))["requested"].tolist() == live.tolist()
    for expandable in (False, True):
        attach_reserved(document, expandable_segments=expandable)
        reserved = np.array([step["reserved_bytes"] for step in document["steps"]])
        assert (reserved >= live).all()
        assert (np.diff(reserved) >= 0).all()     # no segment is released without a device capacity
        summary = document["summary"]
        assert summary["reserved_peak_bytes"] == reserved.max() >= summary["peak_bytes"]
        assert summary["allocator"]["expandable_segments"] is expandable


def test_the_importer_flag_adds_reserved_bytes(tmp_path, capsys):
    pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
    from backend.importers.torch import main
    from backend.trace.document_versions import unpack
    out = tmp_path / "run.json"
    assert main([str(ROOT / "examples" / "torch" / "mlp.py"), "--allocator", "cuda", "--out", str(out)]) == 0
    document = unpack(json.loads(out.read_text()))
    # mlp.py's storages are all small (its largest is 16 KiB): one 2 MiB small-pool segment from the first step on
    assert {step["reserved_bytes"] for step in document["steps"]} == {2 * MiB}
    assert document["summary"]["reserved_peak_bytes"] == 2 * MiB and document["summary"]["reserved_peak_step"] == 0
    assert "cuda allocator: reserved peak 2,097,152 B at step 0" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--allocator replays one rank's document"):
        main([str(ROOT / "examples" / "torch" / "mlp.py"), "--allocator", "cuda", "--nproc", "2"])
