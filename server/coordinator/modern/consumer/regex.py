"""Regex subscriptions (KIP-848 §2.5, Kafka's `TopicRegexResolver` and `Utils.throwIfRegularExpressionIsInvalid`).

Kafka compiles `SubscribedTopicRegex` with RE2J and resolves it with a *full* match over every topic name in
its metadata image. groupcoord uses Google's RE2 through the `google-re2` binding (the same RE2 syntax RE2J
implements, linear-time matching, so a client's regex cannot make the coordinator backtrack), anchored with
`fullmatch`.

Resolution here is synchronous and deterministic: the group's regexes are resolved against the topics the
heartbeat sees (Kafka resolves asynchronously, batched, at most every 10 s, refreshing on topic creation or
after `group.consumer.regex.refresh.interval.ms`). Results are cached per regex and per topic-name set, so a
steady-state heartbeat costs one look at the topic names, not a scan per regex.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import re2  # type: ignore[import-untyped]

_MAX_CACHED = 4096
_OPTIONS: Any = re2.Options()
_OPTIONS.log_errors = False  # RE2 logs every parse error to stderr through absl otherwise


class InvalidRegularExpression(Exception):
    """A regex RE2 does not compile; the message is Kafka's."""


def _description(err: Exception) -> str:
    arg = err.args[0] if err.args else str(err)
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def compile_regex(regex: str) -> Any:
    """The compiled RE2 pattern; raises `InvalidRegularExpression` with Kafka's message."""
    try:
        return re2.compile(regex, _OPTIONS)
    except Exception as err:  # re2.error: the binding's only parse failure
        raise InvalidRegularExpression(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {_description(err)}."
        ) from None


def syntax_error(regex: str) -> str | None:
    """RE2's description of what is wrong with `regex`, None when it compiles (`groupcoord groups
    validate-regex`, Kafka's `ConsumerGroupCommand.validateRegex`)."""
    try:
        re2.compile(regex, _OPTIONS)
    except Exception as err:
        return _description(err)
    return None


class RegexResolver:
    """Compiled patterns and their last resolution, per regex: reused while the topic names do not change."""

    def __init__(self) -> None:
        self._compiled: dict[str, Any] = {}
        self._cache: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # regex -> (names, matches)

    def validate(self, regex: str) -> None:
        if regex not in self._compiled:
            if len(self._compiled) >= _MAX_CACHED:  # regexes of members long gone: start over
                self._compiled.clear()
                self._cache.clear()
            self._compiled[regex] = compile_regex(regex)

    def resolve(self, regexes: Iterable[str], names: frozenset[str]) -> dict[str, frozenset[str]]:
        """regex -> the topic names it fully matches (a regex that does not compile matches nothing, as
        Kafka logs and ignores it)."""
        out: dict[str, frozenset[str]] = {}
        for regex in regexes:
            hit = self._cache.get(regex)
            if hit is not None and (hit[0] is names or hit[0] == names):
                out[regex] = hit[1]
                continue
            try:
                self.validate(regex)
            except InvalidRegularExpression:
                out[regex] = frozenset()
                continue
            pattern = self._compiled[regex]
            matches = frozenset(n for n in names if pattern.fullmatch(n) is not None)
            self._cache[regex] = (names, matches)
            out[regex] = matches
        return out


def union(resolved: Mapping[str, frozenset[str]]) -> set[str]:
    out: set[str] = set()
    for names in resolved.values():
        out |= names
    return out
