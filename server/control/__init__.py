"""Test controls for a running coordinator: a virtual clock, group observation, fault injection, request
recording and their HTTP endpoint. The one entry is `Control` (`Broker.controls()`); nothing here runs
unless a test or the `--virtual-clock` / `--control-port` flags ask for it."""

from groupcoord.server.control.control import Control
from groupcoord.server.control.views import GroupView, MemberView

__all__ = ["Control", "GroupView", "MemberView"]
