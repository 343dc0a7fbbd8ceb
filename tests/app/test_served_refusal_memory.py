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
* Sessions see only their own data, and hand their memory back when they close (issues #16,
  #20, #25; three tests with a server each before, now two rounds on this server):

  - round 1: four sessions upload a 10^6-row file each (a column named after each) and compute
    at once (the Calibration page); each one's Subpopulations page names its own column and no
    other session's; the tabs close; RSS must be back within idle + 300 MB within two minutes;
  - round 2: three new sessions upload a 10^5-row file each, one after the other (without
    computing), each seeing neither the others' columns nor round 1's (a cache shared under too
    coarse a key shows only when a session reads after another: concurrent reads all miss);
    RSS must be back within idle + 300 MB, and within the settled RSS after round 1 + 200 MB
    (nothing kept from round 1), within the TTL and two sweeps (round 1's four 10^6-row
    sessions are the leak signal; a second round of 10^6-row files cost about 100 s at load 30
    and adds no case).

  The sessions open the link of their file (``/?sha=<SHA-256>``: the Data page waits for that
  file instead of loading the demo, the same upload path after the drop), which spares chromium
  drawing the demo in seven tabs. Without the sweep (``dashboard/janitor.py``'s ``sweep``
  freeing nothing) round 1 left 804 MB against an idle 256 MB (h21m): 10^6 rows per session
  keep the signal near twice the margin; with the sweep it settles near idle + 50-90 MB.

Per case the message shown, the peak RSS (the kernel's ``VmHWM``), the RSS after and the
seconds at which each phase of the rounds ended are written to
test-artifacts/served-refusal-memory.json.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
import zlib
from pathlib import Path

import pytest
from browser_kit import ARTIFACTS, launched, open_page, served, wait_idle
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
    _write()  # also what a failed case measured up to its failure (its phases)


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
    # the link of the file: the Data page waits for it (no demo drawn), the same upload path
    page.goto(f"{base}/?sha={hashlib.sha256(raw).hexdigest()}", timeout=120_000)
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


ROUNDS = ((("r0s0", "r0s1", "r0s2", "r0s3"), 1_000_000), (("r1s0", "r1s1", "r1s2"), 100_000))
"""(tags, rows per file). Round 1: four sessions upload a 10^6-row file each and compute at once
(the leak signal: 550 MB above idle without the sweep, the margin 300); round 2: three new
sessions upload a 10^5-row file each (test_served's size before): nothing kept from round 1 and
none sees round 1's data. Every tag's file has a column of its own."""
SESSION_MARGIN = 200 * 2**20
"""The server's RSS after round 2 may exceed its settled RSS after round 1 by at most this."""
SETTLE = TTL + 2 * SWEEP + 3
"""Seconds within which closed sessions expired (TTL) and the sweep ran twice."""


class Phases:
    """Seconds since the start of a test at which each named phase ended (written with the
    numbers: where a run's time goes)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ended: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        self.ended[name] = round(time.monotonic() - self.started, 1)


def sees_only_its_own(page, tag: str, tags) -> None:
    """The page names the column of its session's file (``col_<tag>``) and no other tag's."""
    text = page.inner_text("body")
    for other in (t for t in tags if t != tag):
        assert f"col_{other}" not in text, (tag, other)
    assert f"col_{tag}" in text, tag  # a page that names the columns: the check above can fail


def open_uploads(browser, base: str, files: dict[str, bytes], pid: int, tags, phases: Phases,
                 name: str, *, at_once: bool) -> list:
    """One browser context per file: each opens the link of its file (``?sha=``: the Data page
    waits for that file, showing no demo), drops it (``<tag>.csv``) and, once the page has read
    it, names its column ``col_<tag>`` and none of the other ``tags``'. ``at_once``: all files
    are dropped before any is read (concurrent reads); else one by one, each read before the
    next is dropped (a later session finds the earlier ones' data held: a cache shared across
    sessions under too coarse a key shows). The server's peak RSS is reset before the uploads.
    Returns the pages; ``phases`` gets ``<name>_<phase>`` marks."""
    pages = [browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
             for _ in files]
    for page in pages:  # a click waits up to two minutes, not 30 s: four tabs load the machine
        page.set_default_timeout(120_000)
    for page, raw in zip(pages, files.values(), strict=True):
        page.goto(f"{base}/?sha={hashlib.sha256(raw).hexdigest()}", timeout=120_000)
    for page in pages:
        wait_idle(page, timeout=180_000)
    phases(f"{name}_pages_open")
    _reset_peak(pid)

    def read(page, tag: str) -> None:
        # the caption of an adopted upload (its session's name), not the column: a session
        # shown another's rows fails on the check below rather than waiting for its own column
        wait_text(page, "Analysing the uploaded file", timeout=300_000)
        wait_idle(page, timeout=300_000)
        no_exception(page)
        sees_only_its_own(page, tag, tags)
        phases(f"{name}_{tag}_read")

    for page, (tag, raw) in zip(pages, files.items(), strict=True):
        upload(page, f"{tag}.csv", raw)
        if not at_once:
            read(page, tag)
    if at_once:
        phases(f"{name}_files_dropped")
        for page, tag in zip(pages, files, strict=True):
            read(page, tag)
    return pages


def test_sessions_see_only_their_data_and_hand_their_memory_back(server):
    """Isolation, each round's memory back, four at once: one server, two rounds of uploads
    (the cases of three tests before, each with its server and rounds: test_served's three
    rounds of two 10^5-row sessions, test_served_limits' two rounds of three 10^6-row ones and
    this file's four concurrent 10^6-row sessions computing)."""
    process, base, browser, idle = server
    pid = process.pid
    phases = Phases()
    NUMBERS["phases_seconds"] = phases.ended
    files = {tag: big_session_file(tag, rows) for tags, rows in ROUNDS for tag in tags}
    phases("files")
    settled = []
    for number, (tags, rows) in enumerate(ROUNDS, 1):
        pages = open_uploads(browser, base, {tag: files[tag] for tag in tags}, pid, files,
                             phases, f"round_{number}", at_once=number == 1)
        if number == 1:  # the four compute at once: the Calibration page of each upload
            for page in pages:
                page.get_by_role("link", name="Calibration", exact=True).first.click()
            for page in pages:
                page.get_by_text("Kuiper D").first.wait_for(timeout=300_000)
                wait_idle(page, timeout=300_000)
                no_exception(page)
            phases("round_1_computed")
        for page, tag in zip(pages, tags, strict=True):  # each sees only its own columns
            open_page(page, "Subpopulations")
            wait_idle(page, timeout=300_000)
            sees_only_its_own(page, tag, files)
            no_exception(page)
        phases(f"round_{number}_isolation_checked")
        peak, open_rss = _peak(pid), rss(pid)
        for page in pages:
            page.context.close()
        # polled against the bound: a passing run ends once the memory is back, a failing one
        # reads the RSS at the deadline the claim states (two minutes after four sessions
        # computed; TTL and two sweeps after the second round)
        bound = idle + MARGIN if number == 1 else min(idle + MARGIN, settled[0] + SESSION_MARGIN)
        after, waited = rss_within(pid, bound, WITHIN if number == 1 else SETTLE)
        phases(f"round_{number}_memory_back")
        NUMBERS[f"round_{number}"] = {
            "sessions": len(tags), "rows_per_file": rows, "rss_idle_MB": idle / 2**20,
            "peak_rss_MB": peak / 2**20, "rss_open_MB": open_rss / 2**20,
            "rss_after_MB": after / 2**20,
            "seconds_to_come_back": round(waited, 1)}
        assert process.poll() is None, "the server died"
        assert after <= idle + MARGIN, NUMBERS[f"round_{number}"]
        if number == 1:  # the reference for round 2: every closed session expired and swept
            time.sleep(max(0.0, SETTLE - waited))
            settled.append(rss(pid))
            NUMBERS["round_1"]["rss_settled_MB"] = settled[0] / 2**20
    NUMBERS["session_margin_MB"] = SESSION_MARGIN / 2**20
    _write()
    assert after <= settled[0] + SESSION_MARGIN, NUMBERS


def _write() -> None:
    """Add this run's cases to the file (a case run alone keeps the other's numbers)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "served-refusal-memory.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    path.write_text(json.dumps({**kept, **NUMBERS}, indent=2))
