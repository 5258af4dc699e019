"""The report's input schema is the journal writer's field list, in the same order."""

from __future__ import annotations

from groupcoord.pipeline.schema import JOURNAL_SCHEMA
from groupcoord.server.coordinator.context import EVENT_KEYS
from groupcoord.server.journal import FIELDS


def test_pipeline_schema_reads_exactly_the_fields_the_journal_writes() -> None:
    assert [f.name for f in JOURNAL_SCHEMA.fields] == list(FIELDS)


def test_journal_fields_are_the_machine_event_keys_plus_seq() -> None:
    assert [k for k in FIELDS if k != "seq"] == list(EVENT_KEYS)
