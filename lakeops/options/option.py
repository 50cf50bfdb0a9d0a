"""One row per table option: :class:`Option` (key, default, form, range, status).

A row says everything lakeops knows about one Paimon option key (or key pattern such as
``fields.<field>.aggregate-function``):

* ``default`` — Paimon's default, once: a value, a :class:`PerKind` value (``target-file-size`` is
  128 MB for primary-key tables and 256 MB for append tables, as ``CoreOptions.targetFileSize``),
  a :class:`Derived` value (``num-sorted-run.stop-trigger`` follows the compaction trigger), or
  None (unset means "off" or "not given");
* ``form`` — how the text parses (:data:`INT`, :data:`FLOAT`, :data:`BOOL`, :data:`MEMORY`,
  :data:`DURATION`, :data:`STRING`, :data:`LIST`, :func:`enum`);
* ``range`` — the valid values of a typed form (:class:`Range`), the ranges Paimon's code
  relies on (``Levels`` needs two levels, off-peak hours are hours of the day or -1 …);
* ``status`` — ``honoured``, ``ignorable`` or ``refused``, with ``refuse_value`` for the values of
  an honoured or ignorable option lakeops refuses ("refused when"), ``note``, ``fix`` and
  ``reads_wrong`` (the refusal also refuses reads).

The option families (:class:`~lakeops.options.TableOptions`, ``CompactOptions`` …) read every
value through its row (``TARGET_FILE_SIZE.get(options, primary_key=False)``), so parsing, the
range check and the default live in one place. The rows themselves are in the ``rows_*``
modules, one per theme; :mod:`lakeops.options.registry` looks them up.

Value syntax, as Paimon's ``OptionsUtils``: integers are decimal digits with an optional sign
(surrounding blanks are ignored); booleans are ``true`` / ``false`` (any case); memory sizes
``256 mb``, ``64kb``; durations ``30 min``, ``1 h``, ``500 ms``
(:mod:`lakeops.options.parsing`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from lakeops.errors import ConfigurationError
from lakeops.options.parsing import option_list, parse_duration, parse_memory_size

__all__ = [
    "BOOL",
    "DURATION",
    "FLOAT",
    "INT",
    "INT_MAX",
    "LIST",
    "LONG_MAX",
    "MEMORY",
    "STRING",
    "enum",
    "Derived",
    "Form",
    "Option",
    "OptionStatus",
    "PerKind",
    "Range",
    "Treatment",
    "ValueRule",
]

T = TypeVar("T")
FormName = Literal["int", "float", "bool", "memory", "duration", "string", "list", "enum"]
OptionStatus = Literal["honoured", "ignorable", "refused"]
#: ``(value, all options) -> True`` when lakeops cannot honour this value
ValueRule = Callable[[str, Mapping[str, str]], bool]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

_INT = re.compile(r"\s*[+-]?\d+\s*")


class _Invalid(ValueError):
    """The text does not parse in the form (the row turns it into its message)."""


@dataclass(frozen=True)
class Form(Generic[T]):
    """How an option's text parses.

    Attributes:
        name: ``int`` (Java int or long), ``float``, ``bool``, ``memory`` (bytes), ``duration``
            (milliseconds), ``string``, ``list`` (comma-separated names) or ``enum`` (one of
            ``choices``, any case, surrounding blanks ignored).
        parse: text and key to the value; raises ``_Invalid`` for text of another form.
        numeric: the value has a range (numbers, bytes, milliseconds).
        choices: the values of an ``enum`` form.
    """

    name: FormName
    parse: Callable[[str, str], T] = field(repr=False)
    numeric: bool = True
    #: the values of an ``enum`` form (trimmed, lower case)
    choices: tuple[str, ...] = ()


def _parse_int(text: str, _: str) -> int:
    if not _INT.fullmatch(text):
        raise _Invalid(text)
    return int(text)


def _parse_float(text: str, _: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _Invalid(text) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise _Invalid(text)
    return value


def _parse_bool(text: str, _: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise _Invalid(text)
    return value == "true"


def _parse_memory(text: str, key: str) -> int:
    try:
        return parse_memory_size(text, key)
    except ConfigurationError:
        raise _Invalid(text) from None


def _parse_duration(text: str, key: str) -> int:
    try:
        return parse_duration(text, key)
    except ConfigurationError:
        raise _Invalid(text) from None


INT: Form[int] = Form("int", _parse_int)
FLOAT: Form[float] = Form("float", _parse_float)
BOOL: Form[bool] = Form("bool", _parse_bool, numeric=False)
MEMORY: Form[int] = Form("memory", _parse_memory)
DURATION: Form[int] = Form("duration", _parse_duration)
STRING: Form[str] = Form("string", lambda text, _: text, numeric=False)


def enum(*choices: str) -> Form[str]:
    """The form of an option whose value is one of ``choices`` (trimmed, any case; the value
    is the choice in lower case)."""

    def parse(text: str, _: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise _Invalid(text)
        return value

    return Form("enum", parse, numeric=False, choices=choices)


LIST: Form[tuple[str, ...]] = Form("list", lambda text, _: option_list(text), numeric=False)


@dataclass(frozen=True)
class Range:
    """The valid values of a numeric option.

    Attributes:
        low: smallest valid value (bytes / milliseconds for memory sizes and durations), or None.
        high: largest valid value, or None.
        special: values outside ``low``..``high`` that are valid too (``-1`` = "off").
        meaning: what the value means, for the error message.
    """

    low: float | None = None
    high: float | None = None
    special: tuple[int, ...] = ()
    meaning: str = ""

    def admits(self, value: float) -> bool:
        if value in self.special:
            return True
        return not (
            (self.low is not None and value < self.low)
            or (self.high is not None and value > self.high)
        )

    def describe(self, form: FormName) -> str:
        """The valid values in words (``an integer from 0 to 23 or -1``)."""
        if form == "bool":
            return "'true' or 'false'"
        unit = {"memory": " bytes", "duration": " ms"}.get(form, "")
        parts = []
        if self.low is not None and self.high is not None:
            parts.append(f"from {_num(self.low)} to {_num(self.high)}{unit}")
        elif self.low is not None:
            parts.append(f"at least {_num(self.low)}{unit}")
        elif self.high is not None:
            parts.append(f"at most {_num(self.high)}{unit}")
        parts += [str(s) for s in self.special]
        what = {
            "int": "an integer",
            "float": "a number",
            "memory": "a memory size such as '256 mb',",
            "duration": "a duration such as '30 min',",
        }.get(form, "a value")
        return f"{what} " + " or ".join(parts) if parts else what


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


#: any value of the form (a boolean has no range but its two words)
ANY = Range()


@dataclass(frozen=True)
class PerKind(Generic[T]):
    """A default that depends on the table kind, as Paimon's ``CoreOptions`` states it."""

    primary_key: T
    append: T


@dataclass(frozen=True)
class Derived(Generic[T]):
    """A default computed from other options (``num-levels`` = the compaction trigger + 1)."""

    of: Callable[[Mapping[str, str]], T] = field(repr=False)
    text: str = ""


@dataclass(frozen=True)
class Option(Generic[T]):
    """Everything lakeops knows about one option key or key pattern.

    Attributes:
        key: the exact key, or a pattern such as ``fields.<field>.aggregate-function``.
        default: Paimon's default (a value, :class:`PerKind`, :class:`Derived`), or None.
        form: how the text parses.
        range: the valid values of a typed form (``Range()``: every value of the form), checked
            whenever the value is read and when a table is created, altered or written; None:
            not checked at create, alter or write (the form is still checked when the value is
            read; the options lakeops ignores, and enumerations and lists, which their families
            check when they parse them).
        status: ``honoured``, ``ignorable`` or ``refused``.
        note: what lakeops does with it, or why it ignores / refuses it.
        fix: for refusals, what the user can do.
        refuse_value: for honoured and ignorable options, the values lakeops cannot honour.
        reads_wrong: a refusal of this option also refuses reads (their result would be wrong).
        fallbacks: older keys read when ``key`` is unset (``write.compaction-skip``).
    """

    key: str
    default: T | PerKind[T] | Derived[T] | None
    form: Form[T]
    range: Range | None
    status: OptionStatus
    note: str
    fix: str = ""
    refuse_value: ValueRule | None = field(default=None, repr=False)
    reads_wrong: bool = False
    fallbacks: tuple[str, ...] = ()

    # ------------------------------------------------------------------------ what it is
    @property
    def is_pattern(self) -> bool:
        return "<" in self.key

    def matches(self, key: str) -> bool:
        if not self.is_pattern:
            return key == self.key
        return _pattern_regex(self.key).fullmatch(key) is not None

    def refuses(self, value: str, options: Mapping[str, str]) -> bool:
        """Whether lakeops cannot honour this option with ``value``."""
        if self.status == "refused":
            return True
        return self.refuse_value is not None and self.refuse_value(value, options)

    # ------------------------------------------------------------------------ its value
    def is_set(self, options: Mapping[str, str], *, blank_is_unset: bool = False) -> bool:
        """Whether ``options`` give this option (or one of its fallback keys); a blank value
        counts as not given when ``blank_is_unset``."""
        return self.text(options, blank_is_unset=blank_is_unset) is not None

    def text(self, options: Mapping[str, str], *, blank_is_unset: bool = False) -> str | None:
        """The raw text of this option in ``options`` (or of its first fallback key given)."""
        for k in (self.key, *self.fallbacks):
            if k in options:
                text = str(options[k])
                if blank_is_unset and not text.strip():
                    continue
                return text
        return None

    def get(
        self,
        options: Mapping[str, str],
        *,
        primary_key: bool = True,
        key: str | None = None,
        blank_is_unset: bool = False,
    ) -> T:
        """The value of this option in ``options``, parsed and checked against its range, or
        its default (for a :class:`PerKind` default, the one of a primary-key table unless
        ``primary_key`` is False). ``key`` names the key of a pattern row
        (``fields.v.distinct``); a blank value counts as unset when ``blank_is_unset``. A bad
        value is a :class:`ConfigurationError` naming the option, the value, the valid range
        and the fix."""
        value = self.find(options, key=key, blank_is_unset=blank_is_unset)
        if value is not None:
            return value
        default = self.default
        if isinstance(default, PerKind):
            return default.primary_key if primary_key else default.append
        if isinstance(default, Derived):
            return default.of(options)
        if default is None:
            raise ValueError(f"option {self.key!r} has no default; use find()")
        return default

    def find(
        self, options: Mapping[str, str], *, key: str | None = None, blank_is_unset: bool = False
    ) -> T | None:
        """The parsed and checked value of this option when ``options`` give it, else None."""
        for k in (key,) if key is not None else (self.key, *self.fallbacks):
            if k in options and not (blank_is_unset and not str(options[k]).strip()):
                return self.parse(str(options[k]), k)
        return None

    def parse(self, text: str, key: str | None = None) -> T:
        """``text`` as a value of this option (``key``: the name to put in an error)."""
        name = key or self.key
        try:
            value = self.form.parse(text, name)
        except _Invalid:
            raise self._bad(name, text) from None
        if (
            self.form.numeric and self.range is not None and not self.range.admits(value)  # type: ignore[arg-type]
        ):
            raise self._bad(name, text)
        return value

    def check(self, text: str, key: str | None = None) -> None:
        """Refuse ``text`` when it has the wrong form or lies outside the range (only for
        options with a range: the others are checked where they are parsed)."""
        if self.range is not None:
            self.parse(text, key)

    def _bad(self, key: str, text: str) -> ConfigurationError:
        rng = self.range or ANY
        meaning = f" ({rng.meaning})" if rng.meaning else ""
        valid = rng.describe(self.form.name)
        if self.form.choices:
            *first, last = (repr(c) for c in self.form.choices)
            valid = f"one of {', '.join(first)} or {last}" if first else last
        return ConfigurationError(
            f"option {key!r} = {text!r} is invalid: it must be {valid}"
            f"{meaning}; set a valid value or remove {key!r} to use Paimon's default"
        )


@functools.cache
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"<[^>]+>", pattern)
    return re.compile(".+".join(re.escape(p) for p in parts))


@dataclass(frozen=True)
class Treatment:
    """What lakeops does with a group of options (the status part of their rows); ``row``
    and ``rows`` make the rows of that group."""

    status: OptionStatus
    note: str
    fix: str = ""
    refuse_value: ValueRule | None = field(default=None, repr=False)
    reads_wrong: bool = False

    def row(
        self,
        key: str,
        form: Form[T],
        default: T | PerKind[T] | Derived[T] | None = None,
        range: Range | None = None,
        fallbacks: tuple[str, ...] = (),
    ) -> Option[T]:
        """The row of ``key`` with this treatment."""
        return Option(
            key,
            default,
            form,
            range,
            self.status,
            self.note,
            self.fix,
            self.refuse_value,
            self.reads_wrong,
            fallbacks,
        )

    def rows(self, *keys: str) -> tuple[Option[Any], ...]:
        """Rows of string-valued keys (or key patterns) with this treatment."""
        return tuple(self.row(k, STRING) for k in keys)


def honoured(
    note: str, *, fix: str = "", refuse_value: ValueRule | None = None, reads_wrong: bool = False
) -> Treatment:
    return Treatment("honoured", note, fix, refuse_value, reads_wrong)


def ignorable(note: str) -> Treatment:
    return Treatment("ignorable", note)


def refused(note: str, fix: str, *, reads_wrong: bool = False) -> Treatment:
    return Treatment("refused", note, fix, reads_wrong=reads_wrong)


def rng(
    low: float | None = None, high: float | None = None, *special: int, meaning: str = ""
) -> Range:
    """A :class:`Range` (``rng(0, 23, -1, meaning="an hour of the day")``)."""
    return Range(low, high, tuple(special), meaning)
