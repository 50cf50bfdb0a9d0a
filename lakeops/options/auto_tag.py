"""Paimon's automatic tag creation (``tag.automatic-creation``): its options and period arithmetic.

The facts are Paimon 0.9's ``TagAutoCreation``, ``TagPeriodHandler`` and ``TagTimeExtractor``
(plus ``CoreOptions`` for the defaults):

* ``tag.creation-period``: ``daily`` (default), ``hourly`` or ``two-hours``;
* ``tag.period-formatter``: ``with_dashes`` (default, ``2024-01-31`` / ``2024-01-31 07``) or
  ``without_dashes`` (``20240131`` / ``20240131 07``); ``two-hours`` always names with dashes;
* ``tag.creation-delay`` (default 0): a period's tag is created once a snapshot's time is at least
  the period's end plus the delay; it must be shorter than one period;
* ``tag.automatic-completion`` (default false): tag every period after the last tag, not only the
  one just ended;
* ``tag.num-retained-max``: keep at most that many automatically created tags (by snapshot id);
* ``tag.default-time-retained``: written into each tag created.

A tag's *time* is the start of its period as local wall-clock time (a snapshot's ``timeMillis``
in the system time zone, as ``ProcessTimeExtractor``). Periods are counted from the epoch on
the wall-clock time, as Paimon's ``normalizeToPreviousTag`` does. A tag is an automatic one when
its name parses with the period's formatter, leniently as Java's ``ResolverStyle.LENIENT``
(``2024-13-01`` is 2025-01-01); a daily period reads only what precedes the first blank, so
``2024-01-31 07`` counts as a daily tag too, exactly as in Paimon.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.options import rows_retention as R
from lakeops.options.option import Option

__all__ = ["AutoTagOptions", "TagPeriod"]

_EPOCH = dt.datetime(1970, 1, 1)
_PERIODS = {"daily": 24, "hourly": 1, "two-hours": 2}


@dataclass(frozen=True)
class TagPeriod:
    """One of Paimon's tag periods with its name formatter."""

    hours: int
    with_dashes: bool = True

    @property
    def length(self) -> dt.timedelta:
        return dt.timedelta(hours=self.hours)

    @property
    def daily(self) -> bool:
        return self.hours == 24

    def name_of(self, time: dt.datetime) -> str:
        """The tag name of the period starting at ``time`` (Paimon's ``timeToTag``)."""
        sep = "-" if self.with_dashes else ""
        name = f"{time.year}{sep}{time.month:02d}{sep}{time.day:02d}"
        return name if self.daily else f"{name} {time.hour:02d}"

    def time_of(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for, or None when ``name`` is not one of this
        period's names (Paimon's ``tagToTime`` / ``isAutoTag``)."""
        if self.daily:
            name = name.split(" ")[0]
        sep = "-" if self.with_dashes else ""
        hour = "" if self.daily else r" (\d{2})"
        m = re.fullmatch(rf"(\d{{1,10}}){sep}(\d{{2}}){sep}(\d{{2}}){hour}", name, re.ASCII)
        if m is None:
            return None
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hours = 0 if self.daily else int(m.group(4))
        # ResolverStyle.LENIENT: out-of-range months, days and hours carry over
        year += (month - 1) // 12
        month = (month - 1) % 12 + 1
        try:
            start = dt.datetime(year, month, 1)
            return start + dt.timedelta(days=day - 1, hours=hours)
        except (ValueError, OverflowError):
            return None  # outside Python's years (1..9999)

    def previous_start(self, time: dt.datetime) -> dt.datetime:
        """The start of the period before the one holding ``time`` (``normalizeToPreviousTag``:
        the wall-clock time counted as milliseconds since the epoch, floored to the period)."""
        millis = (time - _EPOCH) // dt.timedelta(milliseconds=1)
        period = self.hours * 3_600_000
        return _EPOCH + dt.timedelta(milliseconds=millis // period * period) - self.length


@dataclass(frozen=True)
class AutoTagOptions:
    """A table's ``process-time`` automatic tag creation settings."""

    period: TagPeriod
    delay: dt.timedelta = dt.timedelta(0)
    completion: bool = False
    num_retained_max: int | None = None
    time_retained: dt.timedelta | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> AutoTagOptions | None:
        """The settings of a table whose ``tag.automatic-creation`` is ``process-time``, None
        when it is ``none`` (the default); other modes are the option registry's to refuse.
        A bad value is a :class:`ConfigurationError` naming it."""
        mode = R.TAG_AUTOMATIC_CREATION.get(options).strip().lower()  # others: refused
        if mode != "process-time":
            return None
        period_name = R.TAG_CREATION_PERIOD.get(options)
        formatter = R.TAG_PERIOD_FORMATTER.get(options)
        hours = _PERIODS[period_name]
        period = TagPeriod(hours, with_dashes=formatter == "with_dashes" or hours == 2)
        delay = _duration(options, R.TAG_CREATION_DELAY) or dt.timedelta(0)
        if delay >= period.length:
            raise ConfigurationError(
                f"option 'tag.creation-delay' = {options['tag.creation-delay']!r} must be "
                f"shorter than one tag.creation-period ({period_name}), as Paimon requires"
            )
        return cls(
            period,
            delay,
            R.TAG_AUTOMATIC_COMPLETION.get(options),
            R.TAG_NUM_RETAINED_MAX.find(options),
            _duration(options, R.TAG_DEFAULT_TIME_RETAINED),
        )


def _duration(options: Mapping[str, str], row: Option[int]) -> dt.timedelta | None:
    millis = row.find(options, blank_is_unset=True)
    return None if millis is None else dt.timedelta(milliseconds=millis)
