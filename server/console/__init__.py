"""The live web console (`/ui` on the admin listener): read-only pages over the coordinator's own state.

Kafka users reach for Kafka UI or AKHQ, separate deployments that poll a broker; groupcoord holds the whole
story in one process (the state machine, the journal, the log), so it shows groups as they rebalance. The
console is three parts: `timeline.py` folds journal events into a bounded rebalance timeline per group,
`views.py` builds the JSON each page polls, `app.py` routes `/ui` requests, checks credentials and caches
answers so that any number of open browsers costs one build per cache period. The pages (`static/`) are
plain HTML and JavaScript with no build step and nothing fetched from elsewhere.
"""

from groupcoord.server.console.app import Console

__all__ = ["Console"]
