"""PNG screenshots of an HTML page with headless Chromium (Debian's ``chromium`` package).

The browser runs with a throw-away profile and with networking features off; the page is a
local file. The screenshot is the browser window (1300 x 1600 CSS pixels by default).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from lakeops.cli.errors import CliError

__all__ = ["CHROMIUM_HINT", "find_chromium", "screenshot_html"]

CHROMIUM_HINT = "install Debian's chromium ('apt-get install chromium') to render --png"

_DEFAULT = Path("/usr/bin/chromium")


def find_chromium() -> str:
    """The Chromium executable: ``/usr/bin/chromium``, else ``chromium`` on PATH."""
    if _DEFAULT.is_file():
        return str(_DEFAULT)
    found = shutil.which("chromium")
    if found is None:
        raise CliError(f"chromium is not installed: {CHROMIUM_HINT}")
    return found


def screenshot_html(
    html_file: Path,
    png_file: Path,
    *,
    width: int = 1300,
    height: int = 1600,
    timeout_s: float = 120.0,
) -> None:
    """Render ``html_file`` to ``png_file``; raises :class:`CliError` if Chromium fails."""
    chromium = find_chromium()
    png_file = png_file.resolve()
    png_file.unlink(missing_ok=True)
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
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png_file}",
            html_file.resolve().as_uri(),
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise CliError(f"chromium did not render {html_file} within {timeout_s:g} s") from None
    if done.returncode != 0 or not png_file.is_file():
        lines = [ln for ln in (done.stderr or "").splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit code {done.returncode}"
        raise CliError(f"chromium could not render {html_file} to {png_file}: {detail}")
