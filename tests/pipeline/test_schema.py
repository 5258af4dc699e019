"""The report's input schema is the journal writer's field list, in the same order."""

from __future__ import annotations

from groupcoord.pipeline.schema import JOURNAL_SCHEMA, KNOWN_JOURNAL_VERSION
from groupcoord.server.coordinator.context import EVENT_KEYS
from groupcoord.server.journal.writer import FIELDS, JOURNAL_VERSION


def test_pipeline_schema_reads_exactly_the_fields_the_journal_writes() -> None:
    assert [f.name for f in JOURNAL_SCHEMA.fields] == list(FIELDS)


def test_journal_fields_are_the_version_then_the_machine_event_keys_plus_seq() -> None:
    assert FIELDS[0] == "v"
    assert [k for k in FIELDS[1:] if k != "seq"] == list(EVENT_KEYS)


def test_the_report_knows_the_version_the_coordinator_writes() -> None:
    assert KNOWN_JOURNAL_VERSION == JOURNAL_VERSION
