"""Refused and failed work hands memory back like a closed session (issue 41, item 5).

One real server for the module (``streamlit run app.py`` on 127.0.0.1, a free port), started
under an 8 GB address-space cap (``RLIMIT_AS``, as ``prlimit --as`` sets it; only the server is
capped: chromium dies under such a cap), driven by Debian's chromium through Playwright. Its
session TTL is 2 s and its sweep 1 s (the shipped 120 s TTL alone is two minutes; 30 s and
15 s, then 10 s and 5 s, only made a passing run wait longer for the sessions to be reaped).
The idle RSS is read once, after one session opened the demo and closed (the libraries
imported), and both cases are held to it.

* A gzip CSV upload that decompresses to 0.9 GiB (the issue's 0.88 GiB case: 1 MB on the wire)
  is refused with a message; the server's RSS must be back within idle + 300 MB within two
  minutes *while its tab is still open* (so no session was reaped: the refused work's memory
  comes back when it is refused, whatever the TTL; this case had a server of its own with the
  shipped TTL and sweep for that, and read the RSS after the tab closed), and stay there once
  the tab closed.
* Four sessions upload a 10^6-row file each and compute at once (the Calibration page); the tabs
  close; RSS must be back within idle + 300 MB within two minutes.

Per case the message shown, the peak RSS (the kernel's ``VmHWM``) and the RSS after are written
to test-artifacts/served-refusal-memory.json.
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from pathlib import Path

import pytest
from browser_kit import ARTIFACTS, launched, served, wait_idle
from test_served import (
    big_session_file,
    no_exception,
    proc_bytes,
    rss,
    rss_within,
    upload,
    wait_text,
)

pytestmark = pytest.mark.browser

CAP = 8_000_000_000
MARGIN = 300 * 2**20
WITHIN = 120.0
TTL, SWEEP = 2, 1
"""The server's: closed sessions are reaped within TTL + SWEEP seconds."""
NUMBERS: dict[str, object] = {}


@pytest.fixture(scope="module")
def server():
    """``(process, base URL, chromium, idle RSS)``: one capped server and browser for both."""
    with served(cap=CAP, ttl=TTL, sweep=SWEEP, env={"MCVIZ_MEMORY_BUDGET": None}) as (
            process, base), launched() as browser:
        idle = _idle(browser, base, process.pid)
        yield process, base, browser, idle


def _peak(pid: int) -> int:
    return proc_bytes(pid, "VmHWM")


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _back_within(pid: int, limit: int, seconds: float = WITHIN) -> tuple[int, float]:
    """Poll the RSS every half second until it is at most ``limit`` or ``seconds`` have passed;
    returns (the last RSS read, seconds waited). A passing run ends as soon as the memory is
    back; a failing one reads the RSS at the deadline the claim states."""
    return rss_within(pid, limit, seconds)


def _idle(browser, base: str, pid: int) -> int:
    """RSS after one session opened the demo and closed (the libraries imported)."""
    warm = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    warm.goto(base + "/", timeout=120_000)
    wait_text(warm, "Rows read", timeout=180_000)
    wait_idle(warm)
    warm.context.close()
    time.sleep(5)
    return rss(pid)


def gzip_bomb(lines: int = 150_000_000) -> bytes:
    """``score,label`` and ``lines`` rows of ``0.5,1``: 0.9 GiB of text in about 1 MB of gzip.

    Each 10^6-line block is compressed once (level 9) after a full flush, which empties the
    compressor's window, so the block's bytes refer to nothing before them and are repeated:
    the same stream of text as compressing every line (gzip.decompress gives the header and
    the lines back), in 0.5 s instead of 5.
    """
    block = b"0.5,1\n" * 1_000_000
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header
    head = packer.compress(b"score,label\n") + packer.flush(zlib.Z_FULL_FLUSH)
    packed = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(b"score,label\n")
    for _ in range(lines // 1_000_000):
        crc = zlib.crc32(block, crc)
    size = len(b"score,label\n") + len(block) * (lines // 1_000_000)
    last = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final deflate block
    return (head + packed * (lines // 1_000_000) + last
            + crc.to_bytes(4, "little") + (size % 2**32).to_bytes(4, "little"))


def test_the_gzip_bomb_is_the_lines_it_says():
    text = gzip.decompress(gzip_bomb(3_000_000))
    assert text == b"score,label\n" + b"0.5,1\n" * 3_000_000


def test_a_refused_gzip_upload_hands_its_memory_back_while_its_tab_is_open(server):
    process, base, browser, idle = server
    pid = process.pid
    raw = gzip_bomb()
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(base + "/", timeout=120_000)
    wait_idle(page)
    _reset_peak(pid)
    upload(page, "bomb.csv.gz", raw, mime="application/gzip")
    alert = page.locator("[data-testid=stAlertContentError]").first
    alert.wait_for(timeout=300_000)
    wait_idle(page, timeout=300_000)
    no_exception(page)
    message = alert.inner_text()
    assert "too large to read within the memory budget" in message, message
    peak = _peak(pid)
    open_rss, waited = _back_within(pid, idle + MARGIN)  # the session is alive: nothing reaped
    page.context.close()
    after = rss(pid)
    NUMBERS["refused_gzip"] = {
        "upload_bytes": len(raw), "message": message, "rss_idle_MB": idle / 2**20,
        "peak_rss_MB": peak / 2**20, "rss_tab_open_MB": open_rss / 2**20,
        "seconds_to_come_back": round(waited, 1), "rss_after_MB": after / 2**20}
    _write()
    assert process.poll() is None, "the server died"
    assert open_rss <= idle + MARGIN, NUMBERS["refused_gzip"]
    assert after <= idle + MARGIN, NUMBERS["refused_gzip"]


def test_four_concurrent_million_row_sessions_hand_their_memory_back(server):
    process, base, browser, idle = server
    pid = process.pid
    files = {f"s{k}": big_session_file(f"s{k}") for k in range(4)}
    contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in files]
    pages = [c.new_page() for c in contexts]
    for page in pages:
        page.goto(base + "/", timeout=120_000)
    for page in pages:
        wait_idle(page, timeout=180_000)
    _reset_peak(pid)
    for page, (tag, raw) in zip(pages, files.items(), strict=True):
        upload(page, f"{tag}.csv", raw)
    for page, tag in zip(pages, files, strict=True):
        wait_text(page, f"col_{tag}", timeout=300_000)
        wait_idle(page, timeout=300_000)
    for page in pages:  # the four compute at once: the Calibration page of each upload
        page.get_by_role("link", name="Calibration", exact=True).first.click()
    for page in pages:
        page.get_by_text("Kuiper D").first.wait_for(timeout=300_000)
        wait_idle(page, timeout=300_000)
        no_exception(page)
    peak, open_rss = _peak(pid), rss(pid)
    for context in contexts:
        context.close()
    after, waited = _back_within(pid, idle + MARGIN)
    NUMBERS["four_sessions"] = {
        "message": "(computed: the Calibration page of each upload)",
        "rss_idle_MB": idle / 2**20, "peak_rss_MB": peak / 2**20,
        "rss_open_MB": open_rss / 2**20, "rss_after_MB": after / 2**20,
        "seconds_to_come_back": round(waited, 1)}
    _write()
    assert process.poll() is None, "the server died"
    assert after <= idle + MARGIN, NUMBERS["four_sessions"]


def _write() -> None:
    """Add this run's cases to the file (a case run alone keeps the other's numbers)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "served-refusal-memory.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    path.write_text(json.dumps({**kept, **NUMBERS}, indent=2))
