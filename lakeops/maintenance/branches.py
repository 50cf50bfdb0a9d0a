"""Branches, as Paimon's ``FileSystemBranchManager`` keeps them.

A branch is the directory ``branch/branch-<name>/`` of the table with its own ``schema/``,
``snapshot/`` and ``tag/`` (and changelogs and consumers once written); manifests, index files
and data files stay the table's, shared by every branch. A branch is read and written like
the main branch (``table.branch(name)``: :class:`lakeops.store.table_store.TableStore` with a
branch); snapshot expiry and orphan cleanup of the main branch keep every file a branch's
snapshots and tags reference (:mod:`lakeops.store.keep_alive`).

* **create** (``createBranch``): from a tag — the tag file, the tagged snapshot (written from
  the tag when it expired) and the schemas up to its schema id are copied into the branch; from
  a snapshot — that snapshot and its schemas; from nothing — the latest schema only (an empty
  branch). Schemas are copied first and the snapshot last, so a create cut short leaves at most
  an empty branch (delete it, or create again with ``ignore_if_exists``).
* **delete** (``dropBranch``): the branch's directory goes; data files only it referenced are
  left to orphan cleanup.
* **fast-forward** (``fastForward``): the main branch becomes the branch. Paimon deletes the main
  branch's snapshots, schemas and tags from the branch's earliest snapshot on, then copies the
  branch's in. lakeops copies first (schemas, snapshots, tags: each file replaced atomically),
  then deletes what the main branch held beyond the branch (snapshots after its latest, schemas
  after its newest, tags of snapshots from its earliest on that the branch does not hold), then
  points the ``LATEST`` / ``EARLIEST`` hints at what is there: a fast-forward cut short leaves a
  readable table that running it again completes. As in Paimon, no writer may commit to the
  main branch meanwhile. No data file is deleted.

Names follow Paimon (not ``main``, not blank, not only digits) and lakeops' rule for names on
storage (:func:`lakeops.format.ref_names.check_ref_name`).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from lakeops.errors import ConfigurationError, SnapshotNotFoundError
from lakeops.format import paths
from lakeops.format.ref_names import check_ref_name
from lakeops.io.file_io import join
from lakeops.store.table_store import TableStore, branch_dir
from lakeops.store.tags import TAG_DIR, get_tag, tag_path

__all__ = [
    "MAIN_BRANCH",
    "Branch",
    "check_branch_name",
    "create_branch",
    "delete_branch",
    "fast_forward",
    "list_branches",
]

#: the name of the main branch (Paimon's ``DEFAULT_MAIN_BRANCH``)
MAIN_BRANCH = "main"
_PREFIX = "branch-"
#: what a tag file holds beyond its snapshot (Paimon's ``Tag.trimToSnapshot`` drops them)
_TAG_ONLY = ("tagCreateTime", "tagTimeRetained")


@dataclass(frozen=True)
class Branch:
    """A branch: its name and when its directory was made (Paimon's ``$branches``)."""

    name: str
    create_time: dt.datetime


def check_branch_name(name: object) -> str:
    """``name`` if it can name a branch (see the module docstring), else ConfigurationError."""
    checked = check_ref_name("branch", name)
    if not checked.strip():
        raise ConfigurationError("a branch name must not be blank")
    if checked == MAIN_BRANCH:
        raise ConfigurationError(f"{MAIN_BRANCH!r} is the main branch; name the branch otherwise")
    if checked.isdigit():
        raise ConfigurationError(f"a branch name cannot be only digits ({checked!r})")
    return checked


def _branch_root(store: TableStore, name: str) -> str:
    return join(store.root, branch_dir(name))


def list_branches(store: TableStore) -> list[Branch]:
    """The table's branches, by name."""
    fio = store.file_io
    out = []
    for entry in fio.list_names(join(store.root, "branch")):
        if entry.startswith(_PREFIX) and entry != _PREFIX:
            millis = fio.modified_ms(join(store.root, "branch", entry))
            when = dt.datetime.fromtimestamp(millis / 1000)
            out.append(Branch(entry[len(_PREFIX) :], when))
    return sorted(out, key=lambda b: b.name)


def _exists(store: TableStore, name: str) -> bool:
    return any(b.name == name for b in list_branches(store))


def _copy_schemas(main: TableStore, branch: TableStore, up_to: int) -> None:
    for schema_id in main.schema_ids():
        if schema_id <= up_to:
            relative = paths.schema_path(schema_id)
            data = main.file_io.read_bytes(main.path(relative))
            branch.file_io.overwrite_atomic(branch.path(relative), data)


def create_branch(
    store: TableStore,
    name: str,
    *,
    from_tag: str | None = None,
    from_snapshot: int | None = None,
    ignore_if_exists: bool = False,
) -> Branch:
    """Create branch ``name`` of the main branch's ``store`` (see the module docstring)."""
    check_branch_name(name)
    if from_tag is not None and from_snapshot is not None:
        raise ConfigurationError("create a branch from a tag or from a snapshot, not both")
    if store.branch is not None:
        raise ConfigurationError("branches are created from the main branch")
    if _exists(store, name):
        if ignore_if_exists:
            return next(b for b in list_branches(store) if b.name == name)
        raise ConfigurationError(f"branch {name!r} of table {store.root} exists already")
    branch = TableStore(store.file_io, store.root, name)
    fio = store.file_io
    if from_tag is not None:
        tag = get_tag(store, from_tag)
        data = fio.read_bytes(store.path(tag_path(from_tag)))
        trimmed = {k: v for k, v in json.loads(data).items() if k not in _TAG_ONLY}
        _copy_schemas(store, branch, tag.snapshot.schema_id)
        fio.overwrite_atomic(branch.path(tag_path(from_tag)), data)
        body = json.dumps(trimmed).encode()
        fio.overwrite_atomic(branch.path(paths.snapshot_path(tag.snapshot.id)), body)
    elif from_snapshot is not None:
        if not store.snapshot_exists(from_snapshot):
            raise SnapshotNotFoundError(
                f"snapshot {from_snapshot} of table {store.root} does not exist (or expired); "
                "branch from a tag to keep an expired snapshot"
            )
        snapshot = store.snapshot(from_snapshot)
        _copy_schemas(store, branch, snapshot.schema_id)
        data = fio.read_bytes(store.path(paths.snapshot_path(from_snapshot)))
        fio.overwrite_atomic(branch.path(paths.snapshot_path(from_snapshot)), data)
    else:
        _copy_schemas(store, branch, store.latest_schema().id)
    return next(b for b in list_branches(store) if b.name == name)


def delete_branch(store: TableStore, name: str) -> None:
    """Delete branch ``name`` (its directory; see the module docstring)."""
    check_branch_name(name)
    if not _exists(store, name):
        raise ConfigurationError(f"branch {name!r} of table {store.root} does not exist")
    store.file_io.delete_tree(_branch_root(store, name))


def fast_forward(store: TableStore, name: str) -> int:
    """Make the main branch of ``store`` what branch ``name`` is (see the module docstring);
    the main branch's new latest snapshot id."""
    check_branch_name(name)
    if store.branch is not None:
        raise ConfigurationError("fast-forward the main branch (open the table without a branch)")
    if not _exists(store, name):
        raise ConfigurationError(f"branch {name!r} of table {store.root} does not exist")
    branch = TableStore(store.file_io, store.root, name)
    ids = branch.snapshot_ids()
    if not ids:
        raise ConfigurationError(
            f"cannot fast-forward to branch {name!r} of {store.root}: it has no snapshot"
        )
    fio = store.file_io
    earliest, latest = ids[0], ids[-1]
    schema_ids = branch.schema_ids()
    for schema_id in schema_ids:
        relative = paths.schema_path(schema_id)
        fio.overwrite_atomic(store.path(relative), fio.read_bytes(branch.path(relative)))
    for snapshot_id in ids:
        relative = paths.snapshot_path(snapshot_id)
        fio.overwrite_atomic(store.path(relative), fio.read_bytes(branch.path(relative)))
    branch_tags = set(fio.list_names(branch.path(TAG_DIR)))
    for entry in branch_tags:
        relative = f"{TAG_DIR}/{entry}"
        fio.overwrite_atomic(store.path(relative), fio.read_bytes(branch.path(relative)))
    # what the main branch held beyond the branch goes
    for snapshot_id in store.snapshot_ids():
        if snapshot_id > latest:
            fio.delete(store.path(paths.snapshot_path(snapshot_id)))
    for schema_id in store.schema_ids():
        if schema_id > max(schema_ids):
            fio.delete(store.path(paths.schema_path(schema_id)))
    for entry in fio.list_names(store.path(TAG_DIR)):
        if entry in branch_tags or not entry.startswith("tag-"):
            continue
        tag = get_tag(store, entry[len("tag-") :])
        if tag.snapshot.id >= earliest:
            fio.delete(store.path(f"{TAG_DIR}/{entry}"))
    remaining = store.snapshot_ids()
    fio.overwrite_atomic(store.path(paths.LATEST_HINT), str(latest).encode())
    fio.overwrite_atomic(store.path(paths.EARLIEST_HINT), str(remaining[0]).encode())
    return latest
