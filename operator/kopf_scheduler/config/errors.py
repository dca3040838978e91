"""The error for a configuration the scheduler will not start with."""

from __future__ import annotations


class ConfigError(ValueError):
    def __init__(self, field: str, reason: str, source: str = "") -> None:
        self.field = field
        self.reason = reason
        self.source = source
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"{self.source}: " if self.source else ""
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.reason}"

    def with_source(self, source: str) -> ConfigError:
        return ConfigError(self.field, self.reason, source)
