"""What every Volcano plugin provides."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import PluginOption, Session


class Plugin:
    name = ""

    def __init__(self, option: PluginOption) -> None:
        self.option = option

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None
