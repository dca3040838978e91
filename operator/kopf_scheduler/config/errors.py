"""What reading a configuration can say: an error (the scheduler will not start with it) or a
warning (it starts, but a field the admin set has no effect, or is likely a mistake)."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class ConfigWarning:
    field: str
    reason: str
    source: str = ""

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.field}: {self.reason}"

    def with_source(self, source: str) -> ConfigWarning:
        return ConfigWarning(self.field, self.reason, source)
