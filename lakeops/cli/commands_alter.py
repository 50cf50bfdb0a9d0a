"""``lakeops alter``: Paimon schema changes from the command line, published as one schema."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console

from lakeops.cli.arguments import TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.format.schema_change import (
    AddColumn,
    ColumnPath,
    DropColumn,
    Position,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnType,
    UpdateComment,
)
from lakeops.format.types import DataType

__all__ = ["alter", "column_of", "parse_changes"]

_ADD = re.compile(
    r"^\s*(?P<name>\S+)\s+(?P<type>.+?)(?:\s+(?P<pos>FIRST|AFTER\s+(?P<ref>\S+)))?\s*$", re.I
)


def _pair(text: str, option: str, example: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise CliError(f"{option} {text!r} is not NAME=VALUE, e.g. {option} {example}")
    return name.strip(), value.strip()


def _type(text: str, option: str) -> DataType:
    try:
        return DataType.parse(text)
    except Exception as exc:  # the parser's own error names the problem
        raise CliError(f"{option}: {exc}") from None


_SEGMENT = re.compile(r"`([^`]*)`|([^.`]+)")


def column_of(text: str, renamed: dict[str, str] | None = None) -> ColumnPath:
    """A column, or a nested field as a dotted path (``addr.zip``; a name holding a dot in
    backticks: ```a.b`.c``), as the schema changes take it. ``renamed``: the command's
    renames of top-level columns, so the first name may be given old or new."""
    text = text.strip()
    parts: list[str] = []
    at = 0
    while at <= len(text):
        m = _SEGMENT.match(text, at)
        if m is None or not (m.group(1) or m.group(2)):
            raise CliError(
                f"{text!r} is not a column or a dotted path of fields (e.g. addr.zip; "
                "quote a name with a dot in backticks)"
            )
        parts.append(m.group(1) if m.group(1) is not None else m.group(2))
        at = m.end()
        if at < len(text) and text[at] != ".":
            raise CliError(f"{text!r}: expected '.' after {parts[-1]!r}")
        at += 1
    if renamed and parts[0] not in renamed.values():
        parts[0] = renamed.get(parts[0], parts[0])
    return parts[0] if len(parts) == 1 else tuple(parts)


def parse_changes(
    *,
    add: Sequence[str] = (),
    rename: Sequence[str] = (),
    drop: Sequence[str] = (),
    types: Sequence[str] = (),
    not_null: Sequence[str] = (),
    nullable: Sequence[str] = (),
    comment: Sequence[str] = (),
    set_options: Sequence[str] = (),
    unset: Sequence[str] = (),
    table_comment: str | None = None,
) -> list[SchemaChange]:
    """The changes the options name, in a fixed order: renames, drops, adds, type changes,
    nullability, column comments, options set and removed, the table comment. A column may be
    a nested field's dotted path (:func:`column_of`): ``--add 'addr.zip STRING'``,
    ``--rename addr.zip=postcode``, ``--drop addr.city``, ``--type addr.n=BIGINT``; ``AFTER``
    of a nested ``--add`` names a field beside it.

    The renames go first, and a column that the other options name (``AFTER`` of ``--add``,
    ``--type``, ``--not-null``, ``--nullable``, ``--comment``) may be named either way: by its
    new name or by the name it has before the command, whatever order the options were given
    in (``--add 'note STRING AFTER v' --rename v=value`` puts ``note`` after ``value``). A
    name that is itself a rename's new name is taken as that."""
    changes: list[SchemaChange] = []
    renamed: dict[str, str] = {}
    for text in rename:
        old, new = _pair(text, "--rename", "v=value")
        path = column_of(old)
        changes.append(RenameColumn(path, new))
        if isinstance(path, str):
            renamed[path] = new

    def column(name: str) -> ColumnPath:
        return column_of(name, renamed)

    changes += [DropColumn(column_of(name)) for name in drop]
    for text in add:
        m = _ADD.match(text)
        if m is None:
            raise CliError(
                f"--add {text!r} is not 'NAME TYPE [FIRST | AFTER COLUMN]', "
                "e.g. --add 'note STRING AFTER v'"
            )
        pos = Position.LAST
        name = column(m.group("name"))
        if m.group("pos"):
            ref = m.group("ref")
            if ref and isinstance(name, str):
                ref = column(ref)
            pos = Position.after(str(ref)) if ref else Position.FIRST
        changes.append(AddColumn(name, _type(m.group("type"), "--add"), position=pos))
    for text in types:
        name, type_text = _pair(text, "--type", "qty=BIGINT")
        changes.append(UpdateColumnType(column(name), _type(type_text, "--type")))
    changes += [UpdateColumnNullability(column(n), False) for n in not_null]
    changes += [UpdateColumnNullability(column(n), True) for n in nullable]
    for text in comment:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--comment {text!r} is not COLUMN=TEXT, e.g. --comment 'v=the value'")
        changes.append(UpdateColumnComment(column(name), value or None))
    for text in set_options:
        key, value = _pair(text, "--set", "snapshot.num-retained.max=50")
        changes.append(SetOption(key, value))
    changes += [RemoveOption(k.strip()) for k in unset]
    if table_comment is not None:
        changes.append(UpdateComment(table_comment or None))
    if not changes:
        raise CliError(
            "nothing to change: give --add, --rename, --drop, --type, --not-null, --nullable, "
            "--comment, --set, --unset or --table-comment"
        )
    return changes


def alter(
    ctx: typer.Context,
    table: TableArg,
    add: Annotated[
        list[str] | None,
        typer.Option(
            "--add",
            metavar="'NAME TYPE [FIRST|AFTER COL]'",
            help="Add a column (or a ROW's field: 'addr.zip STRING').",
            show_default=False,
        ),
    ] = None,
    rename: Annotated[
        list[str] | None,
        typer.Option(
            "--rename",
            metavar="OLD=NEW",
            help="Rename a column (or a ROW's field: addr.zip=postcode).",
            show_default=False,
        ),
    ] = None,
    drop: Annotated[
        list[str] | None,
        typer.Option(
            "--drop", metavar="COL", help="Drop a column (or a ROW's field).", show_default=False
        ),
    ] = None,
    types: Annotated[
        list[str] | None,
        typer.Option(
            "--type", metavar="COL=TYPE", help="Widen a column's type.", show_default=False
        ),
    ] = None,
    not_null: Annotated[
        list[str] | None,
        typer.Option(
            "--not-null", metavar="COL", help="Make a column NOT NULL.", show_default=False
        ),
    ] = None,
    nullable: Annotated[
        list[str] | None,
        typer.Option(
            "--nullable", metavar="COL", help="Make a column nullable.", show_default=False
        ),
    ] = None,
    comment: Annotated[
        list[str] | None,
        typer.Option(
            "--comment",
            metavar="COL=TEXT",
            help="Set a column comment (empty: remove).",
            show_default=False,
        ),
    ] = None,
    set_options: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Set a table option.", show_default=False),
    ] = None,
    unset: Annotated[
        list[str] | None,
        typer.Option("--unset", metavar="KEY", help="Remove a table option.", show_default=False),
    ] = None,
    table_comment: Annotated[
        str | None,
        typer.Option(
            "--table-comment", metavar="TEXT", help="Set the table comment.", show_default=False
        ),
    ] = None,
) -> None:
    """Change a table's schema: one new schema-N with every change, exactly as Paimon's ALTER
    TABLE (renames, then drops, adds, types, nullability, comments, options).

    What Paimon refuses (key columns, NOT NULL new columns, options fixed once the table has
    data) and narrowing type changes are refused before anything is written.
    """
    st = state(ctx)
    st.table(table)  # a missing table or warehouse: the CLI's message, with did-you-mean
    changes = parse_changes(
        add=add or [],
        rename=rename or [],
        drop=drop or [],
        types=types or [],
        not_null=not_null or [],
        nullable=nullable or [],
        comment=comment or [],
        set_options=set_options or [],
        unset=unset or [],
        table_comment=table_comment,
    )
    altered = st.catalog().alter_table(table, changes).schema
    fields = [(f.name, f.type.to_paimon()) for f in altered.fields]

    def human(console: Console) -> None:
        console.print(
            f"altered {table}: schema {altered.id}, {len(changes)} change(s); fields "
            + ", ".join(f"{n} {t}" for n, t in fields),
            markup=False,
        )

    st.out.result(
        {
            "table": table,
            "schema_id": altered.id,
            "changes": len(changes),
            "fields": [{"name": n, "type": t} for n, t in fields],
            "options": dict(altered.options),
        },
        human,
    )
