"""The Option row: parsing by form, the range check, defaults (per table kind, derived),
fallback keys, pattern keys and the status."""

from __future__ import annotations

import re
import types

import pytest

from lakeops.errors import ConfigurationError
from lakeops.options import (
    rows_files,
    rows_ignorable,
    rows_layout,
    rows_merge,
    rows_retention,
    rows_write,
)
from lakeops.options.option import (
    BOOL,
    DURATION,
    FLOAT,
    INT,
    LIST,
    MEMORY,
    Derived,
    Option,
    PerKind,
    enum,
    honoured,
    rng,
)
from lakeops.options.registry import REGISTRY, check_option_values, rule_for
from lakeops.options.rows_layout import BUCKET, DYNAMIC_BUCKET_MAX_BUCKETS
from lakeops.options.rows_merge import FIELD_DISTINCT, IGNORE_DELETE, MERGE_ENGINE, SEQUENCE_FIELD
from lakeops.options.rows_write import (
    COMPACTION_OFFPEAK_START_HOUR,
    COMPACTION_SMALL_FILE_RATIO,
    MB,
    NUM_LEVELS,
    NUM_SORTED_RUN_STOP_TRIGGER,
    TARGET_FILE_SIZE,
    WRITE_ONLY,
)

MODULES: tuple[types.ModuleType, ...] = (
    rows_layout,
    rows_merge,
    rows_write,
    rows_retention,
    rows_files,
    rows_ignorable,
)
_T = honoured("a test row")


@pytest.mark.parametrize(
    ("row", "text", "value"),
    [
        (_T.row("i", INT, None, rng()), " +7 ", 7),
        (_T.row("f", FLOAT, None, rng()), "0.25", 0.25),
        (_T.row("b", BOOL, None, rng()), " TRUE ", True),
        (_T.row("b", BOOL, None, rng()), "false", False),
        (_T.row("m", MEMORY, None, rng()), "256 mb", 256 * MB),
        (_T.row("d", DURATION, None, rng()), "30 min", 1_800_000),
        (_T.row("l", LIST, ()), " a, ,b ", ("a", "b")),
    ],
)
def test_each_form_parses_paimons_syntax(row: Option[object], text: str, value: object) -> None:
    assert row.get({row.key: text}) == value


@pytest.mark.parametrize(
    ("row", "text"),
    [
        (_T.row("i", INT, None, rng()), "1.5"),
        (_T.row("f", FLOAT, None, rng()), "nan"),
        (_T.row("b", BOOL, None, rng()), "yes"),
        (_T.row("m", MEMORY, None, rng()), "lots"),
        (_T.row("d", DURATION, None, rng()), "forever"),
    ],
)
def test_text_of_another_form_names_the_option_and_the_fix(row: Option[object], text: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        row.get({row.key: text})
    message = str(err.value)
    assert f"option {row.key!r} = {text!r} is invalid: it must be" in message
    assert "remove" in message


def test_the_range_admits_its_bounds_and_special_values_only() -> None:
    row = COMPACTION_OFFPEAK_START_HOUR
    for ok in ("0", "23", "-1"):
        assert row.get({row.key: ok}) == int(ok)
    for bad in ("24", "-2"):
        with pytest.raises(ConfigurationError, match="an integer from 0 to 23 or -1"):
            row.get({row.key: bad})
    with pytest.raises(ConfigurationError, match=r"a number from 0 to 1 \(a fraction"):
        COMPACTION_SMALL_FILE_RATIO.get({COMPACTION_SMALL_FILE_RATIO.key: "1.5"})


def test_the_range_is_checked_the_same_at_create_and_on_read() -> None:
    """One check: check_option_values (create, alter, write) and the family read (get) refuse
    a value with the same message."""
    options = {"dynamic-bucket.max-buckets": "0"}
    with pytest.raises(ConfigurationError) as at_create:
        check_option_values(options)
    with pytest.raises(ConfigurationError) as on_read:
        DYNAMIC_BUCKET_MAX_BUCKETS.get(options)
    assert str(at_create.value) == str(on_read.value)


def test_target_file_size_has_one_default_per_table_kind() -> None:
    assert isinstance(TARGET_FILE_SIZE.default, PerKind)
    assert TARGET_FILE_SIZE.get({}) == 128 * MB
    assert TARGET_FILE_SIZE.get({}, primary_key=False) == 256 * MB
    given = {"target-file-size": "64 mb"}
    assert TARGET_FILE_SIZE.get(given) == TARGET_FILE_SIZE.get(given, primary_key=False) == 64 * MB


def test_derived_defaults_follow_the_options_they_derive_from() -> None:
    assert isinstance(NUM_LEVELS.default, Derived)
    assert NUM_LEVELS.get({}) == 6 and NUM_SORTED_RUN_STOP_TRIGGER.get({}) == 8
    trigger = {"num-sorted-run.compaction-trigger": "7"}
    assert NUM_LEVELS.get(trigger) == 8 and NUM_SORTED_RUN_STOP_TRIGGER.get(trigger) == 10
    assert NUM_LEVELS.get({**trigger, "num-levels": "3"}) == 3


def test_fallback_keys_are_read_when_the_key_is_unset() -> None:
    assert WRITE_ONLY.get({"write.compaction-skip": "true"}) is True
    assert WRITE_ONLY.get({"write-only": "false", "write.compaction-skip": "true"}) is False
    assert IGNORE_DELETE.get({"partial-update.ignore-delete": "true"}) is True
    with pytest.raises(ConfigurationError, match=r"'write\.compaction-skip' = 'maybe'"):
        WRITE_ONLY.get({"write.compaction-skip": "maybe"})


def test_find_is_none_when_unset_and_blank_counts_as_unset_when_asked() -> None:
    row = rows_retention.CONSUMER_EXPIRATION_TIME
    assert row.find({}) is None
    assert row.find({row.key: " "}, blank_is_unset=True) is None
    assert row.find({row.key: "1 h"}) == 3_600_000
    with pytest.raises(ValueError, match="no default"):
        row.get({})


def test_pattern_rows_read_the_key_they_are_given() -> None:
    options = {"fields.v.distinct": "true"}
    assert FIELD_DISTINCT.get(options, key="fields.v.distinct") is True
    assert FIELD_DISTINCT.get(options, key="fields.w.distinct") is False
    assert rule_for("fields.v.distinct") is FIELD_DISTINCT


def test_list_rows_default_to_no_names() -> None:
    assert SEQUENCE_FIELD.get({}) == ()
    assert SEQUENCE_FIELD.get({"sequence.field": "a,b"}) == ("a", "b")


def test_the_status_says_what_lakeops_does_with_a_value() -> None:
    assert BUCKET.status == "honoured" and not BUCKET.refuses("-2", {})
    chain = rule_for("chain-table.enabled")
    assert chain is not None and chain.reads_wrong
    assert chain.refuses("true", {}) and not chain.refuses("false", {})
    merge_on_read = rule_for("postpone.merge-on-read")
    assert merge_on_read is not None and not merge_on_read.refuses("true", {})
    path = rule_for("path")
    assert path is not None and path.status == "refused" and path.refuses("x", {})
    sink = rule_for("sink.parallelism")
    assert sink is not None and sink.status == "ignorable" and not sink.refuses("9", {})


def test_every_named_row_is_the_registrys_row() -> None:
    """A family reads the same row the registry checks (no second copy of a key)."""
    named = [
        value
        for module in MODULES
        for name, value in vars(module).items()
        if isinstance(value, Option) and name.isupper()
    ]
    assert len(named) > 60
    for row in named:
        assert any(r is row for r in REGISTRY), row.key
        assert rule_for(row.key) is row


def test_every_default_lies_in_its_range() -> None:
    for row in REGISTRY:
        default = row.default
        if row.range is None or default is None or isinstance(default, Derived):
            continue
        values = (
            [default.primary_key, default.append] if isinstance(default, PerKind) else [default]
        )
        for value in values:
            if row.form.numeric:
                assert row.range.admits(value), row.key


def test_an_enumeration_takes_its_choices_in_any_case_and_names_them_when_refused() -> None:
    assert MERGE_ENGINE.get({"merge-engine": " First-Row "}) == "first-row"
    assert MERGE_ENGINE.get({}) == "deduplicate"
    message = (
        "option 'merge-engine' = 'upsert' is invalid: it must be one of 'deduplicate', "
        "'partial-update', 'aggregation' or 'first-row'"
    )
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        MERGE_ENGINE.get({"merge-engine": "upsert"})
    assert enum("a", "b").parse(" B ", "key") == "b"
