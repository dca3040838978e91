"""What reading a configuration can say: an error (the scheduler will not start with it) or a
warning (it starts, but a field the admin set has no effect, or is likely a mistake).

A file with several mistakes is refused with all of them (:class:`ConfigListError`), so an
admin fixes a ConfigMap in one round instead of one per mistake: the reader checks each part that
does not depend on another in an :meth:`ErrorCollector.collecting` block and goes on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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

    @property
    def errors(self) -> tuple[ConfigError, ...]:
        """Every error this one stands for, in the order they were found."""
        return (self,)

    def with_source(self, source: str) -> ConfigError:
        return ConfigError(self.field, self.reason, source)


class ConfigListError(ConfigError):
    """Several errors at once; it reads as the first, and :attr:`errors` holds them all."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self._all = tuple(error for found in errors for error in found.errors)
        first = self._all[0]
        super().__init__(first.field, first.reason, first.source)

    @property
    def errors(self) -> tuple[ConfigError, ...]:
        return self._all

    def with_source(self, source: str) -> ConfigError:
        return ConfigListError([error.with_source(source) for error in self._all])


class ErrorCollector:
    """The errors of the parts checked so far; :meth:`raise_any` raises them together."""

    def __init__(self) -> None:
        self._errors: list[ConfigError] = []

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Run the block; a :class:`ConfigError` it raises is kept instead of propagated."""
        try:
            yield
        except ConfigError as error:
            self._errors.extend(error.errors)

    def add(self, error: ConfigError) -> None:
        self._errors.extend(error.errors)

    def raise_any(self) -> None:
        """Raise the kept errors, one :class:`ConfigError` or a :class:`ConfigListError`."""
        if len(self._errors) == 1:
            raise self._errors[0]
        if self._errors:
            raise ConfigListError(self._errors)


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
