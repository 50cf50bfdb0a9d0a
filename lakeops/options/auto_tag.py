"""Paimon's automatic tag creation (``tag.automatic-creation``): its options and period arithmetic.

Paimon 0.9's modes are ``none``, ``process-time``, ``watermark`` and ``batch`` (the last names
one tag a day after each batch commit, see :mod:`lakeops.maintenance.auto_tags`). The facts are
Paimon 0.9's ``TagAutoCreation``, ``TagPeriodHandler`` and ``TagTimeExtractor``
(plus ``CoreOptions`` for the defaults):

* ``tag.creation-period``: ``daily`` (default), ``hourly`` or ``two-hours``;
* ``tag.period-formatter``: ``with_dashes`` (default, ``2024-01-31`` / ``2024-01-31 07``) or
  ``without_dashes`` (``20240131`` / ``20240131 07``); ``two-hours`` always names with dashes;
* ``tag.creation-period-duration`` (newer Paimon; 0.9 does not know it): periods of that length
  instead, counted from the epoch, named ``yyyyMMddHHmm`` (``202401310730``), as newer Paimon's
  ``PeriodDurationTagPeriodHandler``; a Paimon 0.9 writer of the same table would ignore it and
  tag by ``tag.creation-period``;
* ``tag.creation-delay`` (default 0): a period's tag is created once a snapshot's time is at least
  the period's end plus the delay; it must be shorter than one period;
* ``tag.automatic-completion`` (default false): tag every period after the last tag, not only the
  one just ended;
* ``tag.num-retained-max``: keep at most that many automatically created tags (by snapshot id);
* ``tag.default-time-retained``: written into each tag created.

A tag's *time* is the start of its period as local wall-clock time (a snapshot's ``timeMillis``
in the system time zone, as ``ProcessTimeExtractor``; with ``watermark``, its ``watermark`` in
``sink.watermark-time-zone``, default UTC, as ``WatermarkExtractor``). Periods are counted from
the epoch on the wall-clock time, as Paimon's ``normalizeToPreviousTag`` does. A tag is an
automatic one when
its name parses with the period's formatter, leniently as Java's ``ResolverStyle.LENIENT``
(``2024-13-01`` is 2025-01-01); a daily period reads only what precedes the first blank, so
``2024-01-31 07`` counts as a daily tag too, exactly as in Paimon.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.options import rows_retention as R
from lakeops.options.option import Option

__all__ = ["AutoTagOptions", "TagPeriod", "batch_tags_on", "java_zone"]

_EPOCH = dt.datetime(1970, 1, 1)
_PERIODS = {"daily": 24, "hourly": 1, "two-hours": 2}


@dataclass(frozen=True)
class TagPeriod:
    """One of Paimon's tag periods with its name formatter."""

    hours: int
    with_dashes: bool = True
    #: newer Paimon's ``tag.creation-period-duration`` (milliseconds): periods of that length,
    #: named ``yyyyMMddHHmm`` and read strictly (``hours`` and ``with_dashes`` then unused)
    duration_millis: int | None = None

    @property
    def length(self) -> dt.timedelta:
        if self.duration_millis is not None:
            return dt.timedelta(milliseconds=self.duration_millis)
        return dt.timedelta(hours=self.hours)

    @property
    def daily(self) -> bool:
        return self.hours == 24 and self.duration_millis is None

    def name_of(self, time: dt.datetime) -> str:
        """The tag name of the period starting at ``time`` (Paimon's ``timeToTag``)."""
        if self.duration_millis is not None:
            return f"{time.year:04d}{time.month:02d}{time.day:02d}{time.hour:02d}{time.minute:02d}"
        sep = "-" if self.with_dashes else ""
        name = f"{time.year}{sep}{time.month:02d}{sep}{time.day:02d}"
        return name if self.daily else f"{name} {time.hour:02d}"

    def time_of(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for, or None when ``name`` is not one of this
        period's names (Paimon's ``tagToTime`` / ``isAutoTag``)."""
        if self.duration_millis is not None:  # MINUTE_FORMATTER, ResolverStyle.STRICT
            m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})", name, re.ASCII)
            if m is None:
                return None
            y, mo, d, h, mi = map(int, m.groups())
            try:
                return dt.datetime(y, mo, d, h, mi)
            except ValueError:
                return None
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
        period = self.length // dt.timedelta(milliseconds=1)
        return _EPOCH + dt.timedelta(milliseconds=millis // period * period) - self.length


@dataclass(frozen=True)
class AutoTagOptions:
    """A table's ``process-time`` or ``watermark`` automatic tag creation settings.

    ``watermark_zone`` is set exactly in ``watermark`` mode: a snapshot's time is then its
    ``watermark`` in that zone (``sink.watermark-time-zone``, Paimon's ``WatermarkExtractor``),
    and snapshots without one (absent or ``Long.MIN_VALUE``) are passed over."""

    period: TagPeriod
    delay: dt.timedelta = dt.timedelta(0)
    completion: bool = False
    num_retained_max: int | None = None
    time_retained: dt.timedelta | None = None
    watermark_zone: dt.tzinfo | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> AutoTagOptions | None:
        """The settings of a table whose ``tag.automatic-creation`` is ``process-time`` or
        ``watermark``, None otherwise (``none``, the default, and ``batch``: see
        :func:`batch_tags_on`). A bad value is a :class:`ConfigurationError` naming it."""
        mode = R.TAG_AUTOMATIC_CREATION.get(options).strip().lower()  # others: refused
        if mode not in ("process-time", "watermark"):
            return None
        zone = None
        if mode == "watermark":
            zone = java_zone(R.SINK_WATERMARK_TIME_ZONE.get(options))
        period_name = R.TAG_CREATION_PERIOD.get(options)
        formatter = R.TAG_PERIOD_FORMATTER.get(options)
        hours = _PERIODS[period_name]
        duration = R.TAG_CREATION_PERIOD_DURATION.find(options, blank_is_unset=True)
        period = TagPeriod(
            hours, with_dashes=formatter == "with_dashes" or hours == 2, duration_millis=duration
        )
        delay = _duration(options, R.TAG_CREATION_DELAY) or dt.timedelta(0)
        if delay >= period.length:
            which = "tag.creation-period-duration" if duration is not None else period_name
            raise ConfigurationError(
                f"option 'tag.creation-delay' = {options['tag.creation-delay']!r} must be "
                f"shorter than one tag.creation-period ({which}), as Paimon requires"
            )
        return cls(
            period,
            delay,
            R.TAG_AUTOMATIC_COMPLETION.get(options),
            R.TAG_NUM_RETAINED_MAX.find(options),
            _duration(options, R.TAG_DEFAULT_TIME_RETAINED),
            zone,
        )


def batch_tags_on(options: Mapping[str, str]) -> bool:
    """Whether ``tag.automatic-creation`` is ``batch``: each batch commit tags its snapshot."""
    return R.TAG_AUTOMATIC_CREATION.get(options).strip().lower() == "batch"


def java_zone(text: str) -> dt.tzinfo:
    """A time zone as Java's ``ZoneId.of`` reads it: ``Z``, an offset (``+08:00``, ``+8``),
    ``UTC``/``GMT``/``UT`` with or without an offset, or a region id (``Asia/Shanghai``).
    Anything else is a :class:`ConfigurationError` naming ``sink.watermark-time-zone``."""
    name = text.strip()
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", name)
    if name in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    if m is not None and int(m.group(2)) <= 18:
        sign = -1 if m.group(1) == "-" else 1
        offset = dt.timedelta(
            hours=int(m.group(2)), minutes=int(m.group(3) or 0), seconds=int(m.group(4) or 0)
        )
        if offset <= dt.timedelta(hours=18):
            return dt.timezone(sign * offset)
    try:
        return zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        raise ConfigurationError(
            f"option 'sink.watermark-time-zone' = {text!r} is not a time zone Java knows "
            "(use an id such as 'UTC', 'Asia/Shanghai' or '+08:00')"
        ) from None


def _duration(options: Mapping[str, str], row: Option[int]) -> dt.timedelta | None:
    millis = row.find(options, blank_is_unset=True)
    return None if millis is None else dt.timedelta(milliseconds=millis)
