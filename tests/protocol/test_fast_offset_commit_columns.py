"""OffsetCommit's column path (issue 39) against the declared codec.

- The reader (protocol/fast.py) keeps each topic's partitions as `Columns`; where every partition's metadata
  is the empty string it reads them with one `struct.unpack` (`_fixed_partitions`). On generated requests of
  v2-v9 made mostly of such partitions (the shape clients send), with a few of any other metadata mixed in,
  the decoded request equals the codec's (header, body, ignored bytes), and the columns hold exactly the
  codec's fields, partition by partition.
- The writer (`encode_offset_commit_response`) gives, for v3-v9 answers in columns, the very bytes the
  codec writes for the same answer in dataclasses.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol import fast
from groupcoord.protocol.codec import decode_request_counted, encode_request, encode_response
from groupcoord.protocol.columns import Columns
from groupcoord.protocol.messages import offset_commit as oc

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
text = st.text(max_size=20)
metadata = st.one_of(st.just(""), st.just(""), st.just(""), st.none(), text)


def codec_only(frame: bytes) -> object:
    saved = dict(fast.BODY_READERS)
    fast.BODY_READERS.clear()
    try:
        return decode_request_counted(frame)
    finally:
        fast.BODY_READERS.update(saved)


def build_request(version: int, topics: list[tuple[str, list[tuple[int, int, int, str | None]]]]) -> bytes:
    body = oc.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=-1, member_id="",
        topics=tuple(
            oc.OffsetCommitRequestTopic(name=name, partitions=tuple(
                oc.OffsetCommitRequestPartition(i, o, e if version >= 6 else -1, -1, m) for i, o, e, m in parts))
            for name, parts in topics
        ),
    )  # fmt: skip
    return encode_request(8, version, 7, body, client_id="c")[4:]


partitions = st.lists(st.tuples(int32, int64, int32, metadata), max_size=40)
plain = st.lists(st.tuples(int32, int64, int32, st.just("")), min_size=1, max_size=200)


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(2, 9),
    topics=st.lists(st.tuples(text, st.one_of(partitions, plain)), min_size=1, max_size=3),
    cut=st.integers(0, 2),
)
def test_the_columns_hold_what_the_codec_decodes(
    version: int, topics: list[tuple[str, list[tuple[int, int, int, str | None]]]], cut: int
) -> None:
    frame = build_request(version, topics)
    if cut:  # truncated: both refuse alike (the codec's DecodeError), or both read the same prefix
        frame = frame[: len(frame) - cut]
    try:
        expected = codec_only(frame)
    except Exception as exc:
        try:
            decode_request_counted(frame)
        except Exception as mine:
            assert type(mine) is type(exc)
            return
        raise AssertionError("the reader accepted a frame the codec refuses") from None
    got = decode_request_counted(frame)
    assert got == expected
    for t, want in zip(got[1].topics, expected[1].topics, strict=True):
        assert type(t.partitions) is Columns
        indexes, offsets, epochs, stamps, metas = t.partitions.cols
        assert indexes == tuple(p.partition_index for p in want.partitions)
        assert offsets == tuple(p.committed_offset for p in want.partitions)
        assert epochs == tuple(p.committed_leader_epoch for p in want.partitions)
        assert stamps == tuple(p.commit_timestamp for p in want.partitions)
        assert metas == tuple(p.committed_metadata for p in want.partitions)


def test_a_plain_topic_takes_the_one_unpack_path() -> None:
    parts = [(i, 1000 + i, 3, "") for i in range(100)]
    for version in range(2, 10):
        frame = build_request(version, [("bench", parts)])
        body = decode_request_counted(frame)[1]
        cols = body.topics[0].partitions
        assert cols._rows is None  # not materialised by the decode
        assert cols.cols[0] == tuple(range(100))
        assert cols.cols[4] == ("",) * 100


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(3, 9),
    throttle=st.integers(0, 2**31 - 1),
    corr=int32,
    topics=st.lists(
        st.tuples(st.text(max_size=130), st.lists(st.tuples(int32, st.integers(-1, 120)), max_size=150)),
        max_size=3,
    ),
)
def test_the_writer_writes_the_codecs_bytes(
    version: int, throttle: int, corr: int, topics: list[tuple[str, list[tuple[int, int]]]]
) -> None:
    def body(columns: bool) -> oc.OffsetCommitResponse:
        out = []
        for name, pairs in topics:
            idx, errs = tuple(p for p, _ in pairs), tuple(e for _, e in pairs)
            if columns:
                parts = Columns(oc.OffsetCommitResponsePartition, idx, errs)
            else:
                parts = tuple(oc.OffsetCommitResponsePartition(p, e) for p, e in pairs)
            out.append(oc.OffsetCommitResponseTopic(name=name, partitions=parts))  # type: ignore[arg-type]
        return oc.OffsetCommitResponse(throttle_time_ms=throttle, topics=tuple(out))

    saved = dict(fast.BODY_WRITERS)
    fast.BODY_WRITERS.clear()
    try:
        expected = encode_response(corr, 8, version, body(False))
    finally:
        fast.BODY_WRITERS.update(saved)
    written = fast.encode_offset_commit_response(corr, version, body(True))
    assert written == expected
    assert encode_response(corr, 8, version, body(True)) == expected


def test_other_shapes_are_left_to_the_codec() -> None:
    rows = oc.OffsetCommitResponse(
        topics=(oc.OffsetCommitResponseTopic(name="t", partitions=(oc.OffsetCommitResponsePartition(0, 0),)),)
    )
    assert fast.encode_offset_commit_response(1, 8, rows) is None  # rows, not columns
    cols = oc.OffsetCommitResponse(
        topics=(oc.OffsetCommitResponseTopic(name="t", partitions=Columns(oc.OffsetCommitResponsePartition, (0,), (0,))),)  # type: ignore[arg-type]
    )  # fmt: skip
    assert fast.encode_offset_commit_response(1, 10, cols) is None  # topic ids: the codec's
    assert fast.encode_offset_commit_response(1, 2, cols) is None


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(8, 9),
    corr=int32,
    groups=st.lists(
        st.tuples(
            st.text(max_size=130),
            st.integers(-1, 100),
            st.lists(
                st.tuples(
                    st.text(max_size=20),
                    st.lists(
                        st.tuples(int32, int64, int32, st.sampled_from(["", "", "m"]), st.integers(-1, 90)),
                        max_size=60,
                    ),
                ),
                max_size=3,
            ),
        ),
        max_size=3,
    ),
)
def test_the_fetch_writer_writes_the_codecs_bytes(version: int, corr: int, groups: list) -> None:  # type: ignore[type-arg]
    from groupcoord.protocol.messages import offset_fetch as of

    def body(columns: bool) -> of.OffsetFetchResponse:
        out = []
        for gid, err, topics in groups:
            ts = []
            for name, rows in topics:
                if columns:
                    cols = tuple(tuple(r[i] for r in rows) for i in range(5))
                    parts = Columns(of.OffsetFetchResponsePartitions, *cols)
                else:
                    parts = tuple(of.OffsetFetchResponsePartitions(*r) for r in rows)
                ts.append(of.OffsetFetchResponseTopics(name=name, partitions=parts))  # type: ignore[arg-type]
            out.append(of.OffsetFetchResponseGroup(group_id=gid, topics=tuple(ts), error_code=err))
        return of.OffsetFetchResponse(throttle_time_ms=0, groups=tuple(out))

    saved = dict(fast.BODY_WRITERS)
    fast.BODY_WRITERS.clear()
    try:
        expected = encode_response(corr, 9, version, body(False))
    finally:
        fast.BODY_WRITERS.update(saved)
    written = fast.encode_offset_fetch_response(corr, version, body(True))
    all_empty = all(r[3] == "" for _, _, topics in groups for _, rows in topics for r in rows)
    assert written == (expected if all_empty else None)
    assert encode_response(corr, 9, version, body(True)) == expected
