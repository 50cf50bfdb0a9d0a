"""Waiting for a turn to commit: the pause schedule against a plain model (bounds, jitter), when
a writer stops (``commit.timeout``, ``commit.max-retries``, a table that does not move), and
commits on a real table that lose race after race to a rival writer published from inside
their own attempts."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog, CommitConflictError, ConfigurationError, StaleWriteError
from lakeops.commit.committer import Committer, PlannedChange
from lakeops.commit.retry import STALL_LIMIT, CommitRetry, retry_wait_ms
from lakeops.format import paths
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema_change import SetOption
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.options.commit import CommitRetryOptions

SCHEMA = pa.schema([("id", pa.int64()), ("who", pa.string())])


# ------------------------------------------------------------------ the schedule, modelled
def model_wait_ms(retry: int, low: int, high: int, jitter: float) -> float:
    """Uniform between ``low`` and Paimon's longest pause: low * 2^retry, at most high, plus
    20 % of that."""
    ceiling = float(low)
    for _ in range(retry):
        ceiling = min(ceiling * 2, high)
    ceiling = min(ceiling, high) * 1.2
    return low + (ceiling - low) * jitter


@pytest.mark.parametrize("jitter", [0.0, 0.37, 0.999])
@pytest.mark.parametrize(("low", "high"), [(10, 10_000), (1, 1), (7, 1000), (250, 60_000)])
def test_pauses_double_from_the_minimum_up_to_the_maximum_plus_a_fifth(
    low: int, high: int, jitter: float
) -> None:
    for retry in [*range(40), 100, 10_000]:
        wait = retry_wait_ms(retry, low, high, jitter)
        assert wait == pytest.approx(model_wait_ms(retry, low, high, jitter))
        assert low <= wait <= 1.2 * high  # never below the first pause, nor above Paimon's
        assert wait <= 1.2 * min(low * 2 ** min(retry, 64), high)


def test_jitter_spreads_writers_that_lost_together() -> None:
    waits = {retry_wait_ms(5, 10, 10_000, j / 10) for j in range(10)}
    assert len(waits) == 10 and min(waits) == 10 and max(waits) < 320 * 1.2


def test_defaults_are_paimons() -> None:
    """Paimon: no commit.timeout, 10 ms and 10 s pauses; the retry count is bounded only when
    commit.max-retries is set."""
    assert CommitRetryOptions.from_options({}) == CommitRetryOptions(None, None, 10, 10_000)
    parsed = CommitRetryOptions.from_options(
        {
            "commit.timeout": "2 min",
            "commit.max-retries": "7",
            "commit.min-retry-wait": "50 ms",
            "commit.max-retry-wait": "3 s",
        }
    )
    assert parsed == CommitRetryOptions(120_000, 7, 50, 3000)


class FakeClock:
    """Time that moves only when the retry loop sleeps or an attempt is said to take time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def _retry(clock: FakeClock, jitter: float = 0.5, **options: int | None) -> CommitRetry:
    return CommitRetry(
        CommitRetryOptions(**options),  # type: ignore[arg-type]
        clock=lambda: clock.now,
        sleep=clock.sleep,
        jitter=lambda: jitter,
    )


def test_without_bounds_a_writer_that_sees_progress_keeps_its_turn() -> None:
    clock = FakeClock()
    retry = _retry(clock)
    for n in range(1000):
        assert retry.wait_turn(progressed=True), retry.verdict
        assert clock.sleeps[-1] * 1000 == pytest.approx(model_wait_ms(n, 10, 10_000, 0.5))
    assert max(clock.sleeps) == pytest.approx(0.01 + (12.0 - 0.01) * 0.5)  # ceiling 10 s + 20 %


def test_the_timeout_stops_only_after_it_passed_with_one_try_at_the_deadline() -> None:
    clock = FakeClock()
    retry = _retry(clock, timeout_ms=3000)
    attempt_starts = [0.0]
    while True:
        clock.now += 0.25  # each attempt takes a quarter of a second
        before = retry.elapsed_ms
        if not retry.wait_turn():
            break
        assert before < 3000  # never a retry that starts after the deadline passed
        attempt_starts.append(retry.elapsed_ms)
    assert retry.elapsed_ms >= 3000
    assert attempt_starts[-1] == pytest.approx(3000)  # the last pause was cut to the deadline
    assert "'commit.timeout' = 3.0 s" in retry.verdict
    assert f"for {retry.elapsed_ms / 1000:.1f} s" in retry.verdict
    assert f"({retry.retries + 1} attempts" in retry.verdict


def test_max_retries_counts_retries_as_paimon_does() -> None:
    clock = FakeClock()
    retry = _retry(clock, max_retries=3)
    assert [retry.wait_turn() for _ in range(4)] == [True, True, True, False]
    assert "4 attempts" in retry.verdict and "'commit.max-retries' = 3" in retry.verdict
    assert _retry(FakeClock(), max_retries=0).wait_turn() is False


def test_a_table_that_does_not_move_is_reported_not_waited_on() -> None:
    clock = FakeClock()
    retry = _retry(clock)
    for _ in range(STALL_LIMIT - 1):
        assert retry.wait_turn(progressed=False)
    assert retry.wait_turn(progressed=True)  # progress starts the count again
    for _ in range(STALL_LIMIT - 1):
        assert retry.wait_turn(progressed=False)
    assert not retry.wait_turn(progressed=False)
    assert "latest snapshot stayed the same" in retry.verdict and "lakeops check" in retry.verdict


# ---------------------------------------------------------- commits on a real table
def _rows(start: int, who: str, n: int = 3) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "who": [who] * n}, schema=SCHEMA)


def _bag(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _race(
    catalog: Catalog, options: dict[str, str], losses: int | None
) -> tuple[list[Snapshot | None], pa.Table, pa.Table, float, BaseException | None]:
    """Commit our rows while a rival table handle publishes a snapshot inside each of our
    first ``losses`` attempts (every one, when None), so each of them loses the race.
    Returns the snapshots each attempt planned on, our rows, the rival's rows, the seconds the
    commit took and the error it raised (None when it committed)."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", **options}
    )
    rival = catalog.get_table("db.t")
    ours = _rows(0, "ours")
    writer = table.new_write()
    writer.write(ours)
    entries = [
        ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
        for m in writer.prepare_commit()
        for f in m.new_files
    ]
    change = PlannedChange(entries, (), ())
    planned: list[Snapshot | None] = []
    rival_rows: list[pa.Table] = []

    def plan(latest: Snapshot | None) -> PlannedChange:
        planned.append(latest)
        if losses is None or len(planned) <= losses:
            rows = _rows(1000 + 10 * len(planned), "rival")
            rival.write(rows)  # published before this attempt can publish
            rival_rows.append(rows)
        return change

    started = time.monotonic()
    error: BaseException | None = None
    try:
        Committer(table.context).commit_planned(plan, CommitKind.APPEND)
    except CommitConflictError as exc:
        error = exc
    took = time.monotonic() - started
    return planned, ours, pa.concat_tables(rival_rows), took, error


def test_a_commit_outlasts_many_more_lost_races_than_ten(catalog: Catalog) -> None:
    """No count bound by default: 30 lost races in a row, then the commit lands on top."""
    planned, ours, rivals, _, error = _race(catalog, {"commit.max-retry-wait": "2 ms"}, 30)
    assert error is None
    assert len(planned) == 31
    ids = [s.id for s in planned[1:] if s is not None]
    assert planned[0] is None and len(ids) == 30
    assert ids == sorted(set(ids))  # each attempt planned on the new latest snapshot
    table = catalog.get_table("db.t")
    latest = table.latest_snapshot()
    assert latest is not None and latest.id > ids[-1] and latest.commit_kind == "APPEND"
    assert _bag(table.read()) == _bag(pa.concat_tables([ours, rivals]))


def test_the_timeout_ends_a_commit_that_keeps_losing(catalog: Catalog) -> None:
    options = {"commit.timeout": "300 ms", "commit.max-retry-wait": "20 ms"}
    planned, _, rivals, took, error = _race(catalog, options, None)
    assert isinstance(error, CommitConflictError)
    assert took >= 0.3 and len(planned) >= 2  # it retried, and stopped only after the timeout
    message = str(error)
    assert "other writers kept committing first for" in message
    assert "'commit.timeout' = 300 ms" in message and "raise 'commit.timeout'" in message
    assert "nothing of this commit was published" in message
    table = catalog.get_table("db.t")
    assert _bag(table.read()) == _bag(rivals)  # the rivals' rows, none of ours


def test_max_retries_ends_a_commit_after_that_many_retries(catalog: Catalog) -> None:
    planned, _, rivals, _, error = _race(catalog, {"commit.max-retries": "3"}, None)
    assert isinstance(error, CommitConflictError)
    assert len(planned) == 4 and "'commit.max-retries' = 3" in str(error)
    assert _bag(catalog.get_table("db.t").read()) == _bag(rivals)


def test_a_commit_on_a_table_that_never_moves_gives_up_with_the_reason(
    catalog: Catalog, warehouse: Path
) -> None:
    """The EARLIEST hint says ids up to 100 were used while the latest snapshot is 1: every
    publish is withheld (ids only grow) and no other writer moves the table, so waiting for a
    turn cannot help and no timeout is set."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "commit.max-retry-wait": "1 ms"},
    )
    table.write(_rows(0, "first"))
    (Path(table.root) / paths.EARLIEST_HINT).write_text("100")
    calls: list[Snapshot | None] = []

    def plan(latest: Snapshot | None) -> PlannedChange:
        calls.append(latest)
        return PlannedChange((), (), ())

    with pytest.raises(CommitConflictError, match="latest snapshot stayed the same"):
        Committer(table.context).commit_planned(plan, CommitKind.APPEND)
    assert len(calls) == STALL_LIMIT + 1
    assert {s.id if s else None for s in calls} == {1}
    assert [s.id for s in table.snapshots()] == [1]


def test_alter_refuses_a_bad_commit_option(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    for key, value in [
        ("commit.timeout", "later"),
        ("commit.min-retry-wait", "0 ms"),
        ("commit.max-retry-wait", "25 d"),
    ]:
        with pytest.raises(ConfigurationError, match=rf"{key.replace('.', '[.]')}.*{value}"):
            table.alter(SetOption(key, value))
    table.alter(SetOption("commit.timeout", "10 min"))
    assert catalog.get_table("db.t").context.commit_retry.timeout_ms == 600_000


@pytest.mark.parametrize(("retries", "stale_rounds"), [(None, 12), (2, 100)])
def test_table_write_runs_a_stale_write_again_under_the_same_rule(
    catalog: Catalog, retries: int | None, stale_rounds: int
) -> None:
    """A dynamic-bucket write whose partition's key index another writer changed before each of
    its first 12 commits is run again each time (more than ten times), then lands; with
    'commit.max-retries' = 2 it stops after its third run and names the option."""
    options = {"bucket": "-1", "commit.max-retry-wait": "2 ms"}
    if retries is not None:
        options["commit.max-retries"] = str(retries)
    table = catalog.create_table("db.d", schema=SCHEMA, primary_keys=["id"], options=options)
    rival = catalog.get_table("db.d")
    rounds: list[int] = []
    commit = table.commit

    def commit_after_rival(messages, **kwargs):  # type: ignore[no-untyped-def]
        rounds.append(len(rounds))
        if len(rounds) <= stale_rounds:  # new keys in the same partition: ours are stale
            rival.write(_rows(1000 + 10 * len(rounds), "rival"))
        return commit(messages, **kwargs)

    table.commit = commit_after_rival  # type: ignore[method-assign]
    if retries is None:
        assert table.write(_rows(0, "ours")) is not None
        assert len(rounds) == stale_rounds + 1
        got = catalog.get_table("db.d").read()
        assert got.num_rows == 3 + 3 * stale_rounds
        assert _bag(got.filter(pc.equal(got["who"], "ours"))) == _bag(_rows(0, "ours"))
    else:
        with pytest.raises(StaleWriteError, match=r"'commit\.max-retries' = 2"):
            table.write(_rows(0, "ours"))
        assert len(rounds) == 3
        got = catalog.get_table("db.d").read()
        assert set(got.column("who").to_pylist()) == {"rival"}
