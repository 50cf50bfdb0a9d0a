"""PNG screenshots of an HTML page with headless Chromium (Debian's ``chromium`` package).

The browser runs with a throw-away profile and with networking features off; the page is a
local file. The PNG holds the whole page: a first run of the browser lays the page out at the
given width (1300 CSS pixels by default) with :data:`FULL_PAGE_CSS` (horizontally scrolled parts
unrolled) and reports the content's width and height; the second run renders a window of that
size (at most :data:`MAX_HEIGHT` pixels high, Chromium's limit for one image).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from lakeops.cli.errors import CliError

__all__ = ["CHROMIUM_HINT", "FULL_PAGE_CSS", "MAX_HEIGHT", "find_chromium", "screenshot_html"]

CHROMIUM_HINT = "install Debian's chromium ('apt-get install chromium') to render --png"

_DEFAULT = Path("/usr/bin/chromium")

#: added to the page for the picture: what scrolls sideways in a browser is drawn in full
FULL_PAGE_CSS = ".scroll { overflow: visible !important; }"

#: the tallest PNG rendered (pixels); a longer page is cut there
MAX_HEIGHT = 16000

#: measures the laid-out page into an attribute that ``--dump-dom`` prints
_MEASURE = (
    "<script>(function(){var d=document.documentElement,b=document.body;"
    "var w=Math.ceil(Math.max(d.scrollWidth,b.scrollWidth,b.getBoundingClientRect().right));"
    "var h=Math.ceil(Math.max(d.scrollHeight,b.scrollHeight));"
    "d.setAttribute('data-lakeops-size',w+'x'+h);})();</script>"
)
_SIZE = re.compile(r'data-lakeops-size="(\d+)x(\d+)"')


def find_chromium() -> str:
    """The Chromium executable: ``/usr/bin/chromium``, else ``chromium`` on PATH."""
    if _DEFAULT.is_file():
        return str(_DEFAULT)
    found = shutil.which("chromium")
    if found is None:
        raise CliError(f"chromium is not installed: {CHROMIUM_HINT}")
    return found


def _with_css(page: str, extra: str) -> str:
    """``page`` with :data:`FULL_PAGE_CSS` and ``extra`` added before ``</body>``."""
    tail = f"<style>{FULL_PAGE_CSS}</style>{extra}"
    at = page.rfind("</body>")
    return page + tail if at < 0 else page[:at] + tail + page[at:]


def _run(chromium: str, args: list[str], target: Path, timeout_s: float) -> str:
    """Run headless Chromium on ``target`` with ``args``; its stdout."""
    with tempfile.TemporaryDirectory(prefix="lakeops-chromium-") as profile:
        command = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
            target.resolve().as_uri(),
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise CliError(f"chromium did not render {target} within {timeout_s:g} s") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or "").splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit code {done.returncode}"
        raise CliError(f"chromium could not render {target}: {detail}")
    return done.stdout or ""


def page_size(html_file: Path, *, width: int = 1300, timeout_s: float = 120.0) -> tuple[int, int]:
    """(width, height) in CSS pixels of ``html_file`` laid out ``width`` pixels wide with
    :data:`FULL_PAGE_CSS`: what a PNG must hold to show the whole page."""
    chromium = find_chromium()
    page = html_file.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="lakeops-measure-") as tmp:
        probe = Path(tmp) / "measure.html"
        probe.write_text(_with_css(page, _MEASURE), encoding="utf-8")
        dom = _run(chromium, ["--dump-dom", f"--window-size={width},800"], probe, timeout_s)
    found = _SIZE.search(dom)
    if found is None:
        raise CliError(f"chromium did not report the size of {html_file}")
    return max(width, int(found.group(1))), int(found.group(2))


def screenshot_html(
    html_file: Path,
    png_file: Path,
    *,
    width: int = 1300,
    timeout_s: float = 120.0,
) -> tuple[int, int]:
    """Render the whole of ``html_file`` to ``png_file`` (at least ``width`` CSS pixels wide,
    as high as the page up to :data:`MAX_HEIGHT`); the PNG's (width, height). Raises
    :class:`CliError` if Chromium fails."""
    chromium = find_chromium()
    png_file = png_file.resolve()
    png_file.unlink(missing_ok=True)
    full_width, height = page_size(html_file, width=width, timeout_s=timeout_s)
    height = min(max(height, 1), MAX_HEIGHT)
    page = html_file.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="lakeops-shot-") as tmp:
        source = Path(tmp) / "page.html"
        source.write_text(_with_css(page, ""), encoding="utf-8")
        _run(
            chromium,
            [f"--window-size={full_width},{height}", f"--screenshot={png_file}"],
            source,
            timeout_s,
        )
    if not png_file.is_file():
        raise CliError(f"chromium could not render {html_file} to {png_file}")
    return full_width, height
