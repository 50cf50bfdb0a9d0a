"""Automatic tags (``tag.automatic-creation`` = ``process-time``), checked against a plain model
of Paimon 0.9's ``TagPeriodHandler`` (calendar arithmetic and ``strftime`` names, not the epoch
flooring lakeops uses) and against hand-written expectations of ``TagAutoCreation`` over
scripted commit times (the committer's clock is replaced: no sleeps)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator

import pyarrow as pa
import pytest

import lakeops.commit.committer as committer_module
from lakeops import Catalog, ConfigurationError, Table, UnsupportedFeatureError
from lakeops.maintenance import auto_tags as auto_tags_module
from lakeops.options.auto_tag import AutoTagOptions, TagPeriod

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
T0 = dt.datetime(2024, 1, 1)

# (period, formatter) -> (hours, strftime format of names); two-hours always has dashes
PERIODS = {
    ("daily", "with_dashes"): (24, "%Y-%m-%d"),
    ("daily", "without_dashes"): (24, "%Y%m%d"),
    ("hourly", "with_dashes"): (1, "%Y-%m-%d %H"),
    ("hourly", "without_dashes"): (1, "%Y%m%d %H"),
    ("two-hours", "with_dashes"): (2, "%Y-%m-%d %H"),
    ("two-hours", "without_dashes"): (2, "%Y-%m-%d %H"),
}


def _model_previous_start(hours: int, time: dt.datetime) -> dt.datetime:
    """The start of the period before ``time``'s (periods start at midnight, every ``hours``)."""
    start = time.replace(hour=time.hour - time.hour % hours, minute=0, second=0, microsecond=0)
    return start - dt.timedelta(hours=hours)


def _period(name: str, formatter: str) -> TagPeriod:
    options = AutoTagOptions.from_options(
        {
            "tag.automatic-creation": "process-time",
            "tag.creation-period": name,
            "tag.period-formatter": formatter,
        }
    )
    assert options is not None
    return options.period


TIMES = [
    dt.datetime(2024, 1, 1, 0, 0),
    dt.datetime(2024, 1, 1, 0, 59, 59, 999000),
    dt.datetime(2024, 2, 29, 13, 30),
    dt.datetime(2024, 12, 31, 23, 59),
    dt.datetime(2025, 3, 1, 1, 0, 0, 1000),
]


@pytest.mark.parametrize(("name", "formatter"), list(PERIODS), ids=lambda v: str(v))
def test_period_names_and_previous_period_follow_the_model(name: str, formatter: str) -> None:
    hours, fmt = PERIODS[(name, formatter)]
    period = _period(name, formatter)
    for time in TIMES:
        start = period.previous_start(time)
        assert start == _model_previous_start(hours, time), time
        tag = period.name_of(start)
        assert tag == start.strftime(fmt)
        assert period.time_of(tag) == start


@pytest.mark.parametrize(
    ("name", "formatter", "tag", "expected"),
    [
        ("daily", "with_dashes", "2024-01-31", dt.datetime(2024, 1, 31)),
        # Paimon's daily period reads only what precedes the first blank
        ("daily", "with_dashes", "2024-01-31 07", dt.datetime(2024, 1, 31)),
        ("daily", "with_dashes", "2024-1-31", None),
        ("daily", "with_dashes", "20240131", None),
        ("daily", "without_dashes", "20240131", dt.datetime(2024, 1, 31)),
        ("daily", "without_dashes", "2024-01-31", None),
        # Java's lenient resolver carries out-of-range fields over
        ("daily", "with_dashes", "2024-13-01", dt.datetime(2025, 1, 1)),
        ("daily", "with_dashes", "2024-02-30", dt.datetime(2024, 3, 1)),
        ("hourly", "with_dashes", "2024-01-31 24", dt.datetime(2024, 2, 1)),
        ("hourly", "with_dashes", "2024-01-31", None),
        ("hourly", "without_dashes", "20240131 07", dt.datetime(2024, 1, 31, 7)),
        ("two-hours", "with_dashes", "2024-01-31 07", dt.datetime(2024, 1, 31, 7)),
        ("daily", "with_dashes", "eod-2024-01-31", None),
        ("daily", "with_dashes", "v1", None),
    ],
)
def test_which_names_are_automatic_tags(
    name: str, formatter: str, tag: str, expected: dt.datetime | None
) -> None:
    assert _period(name, formatter).time_of(tag) == expected


def test_option_defaults_and_bad_values() -> None:
    assert AutoTagOptions.from_options({}) is None
    assert AutoTagOptions.from_options({"tag.automatic-creation": "none"}) is None
    on = {"tag.automatic-creation": "Process-Time"}
    assert AutoTagOptions.from_options(on) == AutoTagOptions(TagPeriod(24, True))
    for key, value, match in [
        ("tag.creation-period", "weekly", "tag.creation-period"),
        ("tag.period-formatter", "slashes", "tag.period-formatter"),
        ("tag.creation-delay", "1 d", "shorter than one"),  # Paimon: delay < one period
        ("tag.num-retained-max", "x", "tag.num-retained-max"),
    ]:
        with pytest.raises(ConfigurationError, match=match):
            AutoTagOptions.from_options({**on, key: value})


# ------------------------------------------------------------------- commits at scripted times
class Clock:
    """The committer's ``time`` module, at scripted local wall-clock times."""

    def __init__(self) -> None:
        self.now = T0
        self.sleep = lambda _seconds: None

    def time(self) -> float:
        return self.now.timestamp()  # naive: local time, as Paimon's ZoneId.systemDefault()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(committer_module, "time", fake)
    yield fake


def _table(catalog: Catalog, **options: str) -> Table:
    opts = {"bucket": "1", "tag.automatic-creation": "process-time", **options}
    return catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=opts)


def _commit_at(table: Table, clock: Clock, when: dt.datetime, i: int) -> None:
    clock.now = when
    table.write(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))


def _tags(table: Table) -> list[tuple[str, int]]:
    return [(t.name, t.snapshot.id) for t in table.tags()]


def _h(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour, minute)


# Each case: options, commit times, the tags (name, snapshot id) Paimon has after the last one.
CASES = {
    "daily": (
        {},
        [_h(1, 10), _h(1, 23, 59), _h(2, 0), _h(5, 8), _h(5, 9)],
        # the first snapshot tags the period before its own; then one tag per period ended,
        # on the first snapshot after its end; skipped periods get no tag
        [("2023-12-31", 1), ("2024-01-01", 3), ("2024-01-04", 4)],
    ),
    "daily-completion": (
        {"tag.automatic-completion": "true"},
        [_h(1, 10), _h(2, 0), _h(5, 8), _h(5, 9), _h(5, 10), _h(5, 11)],
        # each commit fills in the next missing period, until it catches up
        [
            ("2023-12-31", 1),
            ("2024-01-01", 2),
            ("2024-01-02", 3),
            ("2024-01-03", 4),
            ("2024-01-04", 5),
        ],
    ),
    "hourly-delay": (
        {"tag.creation-period": "hourly", "tag.creation-delay": "30 min"},
        [_h(1, 10, 10), _h(1, 11, 20), _h(1, 11, 30), _h(1, 12, 29)],
        [("2024-01-01 09", 1), ("2024-01-01 10", 3)],
    ),
    "two-hours-without-dashes": (
        # two-hours always names with dashes, as Paimon
        {"tag.creation-period": "two-hours", "tag.period-formatter": "without_dashes"},
        [_h(1, 9), _h(1, 9, 59), _h(1, 10), _h(1, 15)],
        [("2024-01-01 06", 1), ("2024-01-01 08", 3), ("2024-01-01 12", 4)],
    ),
    "daily-without-dashes-retained-2": (
        {"tag.period-formatter": "without_dashes", "tag.num-retained-max": "2"},
        [_h(1, 1), _h(2, 1), _h(3, 1), _h(4, 1)],
        [("20240102", 3), ("20240103", 4)],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_commits_create_the_tags_paimon_creates(catalog: Catalog, clock: Clock, case: str) -> None:
    options, times, expected = CASES[case]
    table = _table(catalog, **options)
    for i, when in enumerate(times):
        _commit_at(table, clock, when, i)
    assert _tags(table) == expected


def test_retention_counts_automatic_tags_only_and_keeps_existing_ones(
    catalog: Catalog, clock: Clock
) -> None:
    table = _table(catalog, **{"tag.num-retained-max": "1", "tag.default-time-retained": "2 d"})
    _commit_at(table, clock, _h(1, 1), 0)
    table.create_tag("release")  # a user's tag: never deleted for the maximum
    _commit_at(table, clock, _h(1, 2), 1)
    # a tag with this period's name made by hand counts as automatic and is never moved
    table.create_tag("2024-01-01", 2)
    _commit_at(table, clock, _h(2, 5), 2)  # not a day after 2024-01-01 yet: no new tag
    assert _tags(table) == [("2023-12-31", 1), ("release", 1), ("2024-01-01", 2)]
    _commit_at(table, clock, _h(3, 5), 3)
    assert _tags(table) == [("release", 1), ("2024-01-02", 4)]
    tag = next(t for t in table.tags() if t.name == "2024-01-02")
    assert tag.time_retained == dt.timedelta(days=2) and tag.create_time is not None


def test_compaction_commits_create_tags_too(catalog: Catalog, clock: Clock) -> None:
    table = _table(catalog)
    _commit_at(table, clock, _h(1, 1), 0)
    _commit_at(table, clock, _h(1, 2), 1)
    clock.now = _h(2, 3)
    table.compact(full=True)
    assert _tags(table) == [("2023-12-31", 1), ("2024-01-01", 3)]


def test_a_failing_tag_creation_does_not_fail_the_commit(
    catalog: Catalog,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = _table(catalog)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise OSError("tag directory unwritable")

    working = auto_tags_module.create_auto_tags
    monkeypatch.setattr(auto_tags_module, "create_auto_tags", broken)
    with caplog.at_level(logging.WARNING):
        _commit_at(table, clock, _h(1, 1), 0)
    assert "auto_tags_after_commit after snapshot 1 failed" in caplog.text
    assert table.read().num_rows == 1 and table.tags() == []
    monkeypatch.setattr(auto_tags_module, "create_auto_tags", working)
    _commit_at(table, clock, _h(1, 2), 1)  # the next commit catches up, as Paimon's state
    assert _tags(table) == [("2023-12-31", 1)]


def _model_watermark_tags(
    hours: int, fmt: str, watermarks: list[int | None], zone: dt.tzinfo
) -> list[tuple[str, int]]:
    """Paimon 0.9's ``TagAutoCreation`` with a ``WatermarkExtractor``, as a plain model: the
    first snapshot with a watermark tags the period before its own, then each snapshot whose
    watermark reached the end of the next period; no watermark (None, ``Long.MIN_VALUE``),
    no tag. Calendar arithmetic and ``strftime`` names."""
    tags: list[tuple[str, int]] = []
    next_tag: dt.datetime | None = None
    current: int | None = None
    for snapshot_id, given in enumerate(watermarks, start=1):
        if given is not None:  # the commit carries the larger of its and the latest's
            current = given if current is None else max(current, given)
        if current is None or current == -(2**63):
            continue
        utc = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=current)
        time = utc.astimezone(zone).replace(tzinfo=None)
        if next_tag is None or time >= next_tag + dt.timedelta(hours=hours):
            this_tag = _model_previous_start(hours, time)
            tags.append((this_tag.strftime(fmt), snapshot_id))
            next_tag = this_tag + dt.timedelta(hours=hours)
    return tags


def _ms(when: dt.datetime, zone: dt.tzinfo = dt.UTC) -> int:
    return int(when.replace(tzinfo=zone).timestamp() * 1000)


SHANGHAI = dt.timezone(dt.timedelta(hours=8))
WATERMARK_CASES = {
    "daily-utc": ("daily", "with_dashes", "UTC", dt.UTC),
    "hourly-shanghai": ("hourly", "without_dashes", "Asia/Shanghai", SHANGHAI),
    "two-hours-offset": ("two-hours", "with_dashes", "+08:00", SHANGHAI),
}
WATERMARKS = [
    None,  # no watermark: no tag
    -(2**63),  # Flink's "none yet" (Long.MIN_VALUE): no tag
    _ms(_h(1, 10)),
    _ms(_h(1, 10, 30)),
    None,  # carries the latest watermark forward
    _ms(_h(1, 13)),
    _ms(_h(1, 12)),  # an older watermark: the snapshot keeps the newer one
    _ms(_h(2, 0)),
    _ms(_h(5, 7, 59)),
]


@pytest.mark.parametrize("case", list(WATERMARK_CASES))
def test_watermark_tags_follow_the_model(catalog: Catalog, clock: Clock, case: str) -> None:
    period, formatter, zone_name, zone = WATERMARK_CASES[case]
    table = _table(
        catalog,
        **{
            "tag.automatic-creation": "watermark",
            "tag.creation-period": period,
            "tag.period-formatter": formatter,
            "sink.watermark-time-zone": zone_name,
            "write-only": "true",  # one snapshot per write: ids as in the model
        },
    )
    clock.now = dt.datetime(2030, 1, 1)  # the commit time plays no part
    for i, watermark in enumerate(WATERMARKS):
        table.write(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA), watermark=watermark)
    hours, fmt = PERIODS[(period, formatter)]
    expected = _model_watermark_tags(hours, fmt, WATERMARKS, zone)
    assert expected and _tags(table) == expected
    watermarks = [s.watermark for s in table.snapshots()]
    assert watermarks[:2] == [None, -(2**63)] and watermarks[6] == _ms(_h(1, 13))


def test_watermark_mode_without_watermarks_stays_writable(catalog: Catalog, clock: Clock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "watermark"})
    for i, when in enumerate([_h(1, 1), _h(3, 1)]):
        _commit_at(table, clock, when, i)
    table.compact(full=True)
    assert table.read().num_rows == 2 and table.tags() == []


def test_a_bad_watermark_time_zone_is_named() -> None:
    with pytest.raises(ConfigurationError, match=r"sink\.watermark-time-zone"):
        AutoTagOptions.from_options(
            {"tag.automatic-creation": "watermark", "sink.watermark-time-zone": "Mars/Base"}
        )


def test_batch_commits_tag_their_day_and_replace_it(catalog: Catalog, clock: Clock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    _commit_at(table, clock, _h(1, 10), 0)
    _commit_at(table, clock, _h(1, 11), 1)  # the day's tag moves to the newer snapshot
    assert _tags(table) == [("batch-write-2024-01-01", 2)]
    table.create_tag("mine", 1)
    _commit_at(table, clock, _h(2, 9), 2)
    # three tags, two kept: the oldest snapshot's tag goes, whoever named it (as Paimon)
    assert _tags(table) == [("batch-write-2024-01-01", 2), ("batch-write-2024-01-02", 3)]
    # a streaming commit (an identifier of its own) creates no batch tag
    clock.now = _h(3, 9)
    writer = table.new_write()
    writer.write(pa.table({"id": [9], "v": ["9"]}, schema=SCHEMA))
    table.commit(writer.prepare_commit(), commit_user="job", commit_identifier=1)
    assert [n for n, _ in _tags(table)] == ["batch-write-2024-01-01", "batch-write-2024-01-02"]


@pytest.mark.parametrize("mode", ["process-time", "watermark", "batch"])
def test_paimon_09_modes_are_accepted(catalog: Catalog, mode: str) -> None:
    catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"tag.automatic-creation": mode}
    )


def test_unknown_modes_are_refused(catalog: Catalog) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"tag\.automatic-creation"):
        catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_keys=["id"],
            options={"tag.automatic-creation": "event-time"},
        )


def _model_duration_previous_start(minutes: int, time: dt.datetime) -> dt.datetime:
    """Newer Paimon's period of ``minutes``: wall-clock minutes since the epoch floored to it."""
    since = (time - dt.datetime(1970, 1, 1)) // dt.timedelta(minutes=1)
    start = dt.datetime(1970, 1, 1) + dt.timedelta(minutes=since - since % minutes)
    return start - dt.timedelta(minutes=minutes)


@pytest.mark.parametrize(("duration", "minutes"), [("90 min", 90), ("3 h", 180), ("1 d", 1440)])
def test_period_duration_names_and_periods_follow_the_model(duration: str, minutes: int) -> None:
    options = AutoTagOptions.from_options(
        {
            "tag.automatic-creation": "process-time",
            "tag.creation-period": "hourly",  # replaced by the duration, as newer Paimon
            "tag.creation-period-duration": duration,
        }
    )
    assert options is not None
    period = options.period
    assert period.length == dt.timedelta(minutes=minutes)
    for time in TIMES:
        start = period.previous_start(time)
        assert start == _model_duration_previous_start(minutes, time), time
        name = period.name_of(start)
        assert name == start.strftime("%Y%m%d%H%M")
        assert period.time_of(name) == start
    # STRICT: only yyyyMMddHHmm names of real minutes are automatic tags
    for other in ["2024-01-31", "20240131 07", "202401310760", "202413010000", "2024013107"]:
        assert period.time_of(other) is None, other


def test_period_duration_commits_and_delay(catalog: Catalog, clock: Clock) -> None:
    with pytest.raises(ConfigurationError, match=r"tag\.creation-period-duration"):
        AutoTagOptions.from_options(
            {"tag.automatic-creation": "process-time", "tag.creation-period-duration": "0 s"}
        )
    with pytest.raises(ConfigurationError, match=r"tag\.creation-delay"):
        AutoTagOptions.from_options(
            {
                "tag.automatic-creation": "process-time",
                "tag.creation-period-duration": "30 min",
                "tag.creation-delay": "30 min",
            }
        )
    table = _table(catalog, **{"tag.creation-period-duration": "30 min", "write-only": "true"})
    for i, when in enumerate([_h(1, 10, 10), _h(1, 10, 29), _h(1, 10, 30), _h(1, 11, 45)]):
        _commit_at(table, clock, when, i)
    assert _tags(table) == [("202401010930", 1), ("202401011000", 3), ("202401011100", 4)]
