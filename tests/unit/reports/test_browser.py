"""Every report kind opened in headless Chromium, offline: no console errors, no request but the page itself, the
headline numbers equal summary.json's, the plots drawn with hover data, no raw float in the text, and a Pareto point
opening its design's report. Skips where no Chromium is installed (Debian: apt-get install chromium)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from accel_sim.cli import main
from accel_sim.dse import load_sweep, run_sweep
from accel_sim.dse.executors import LocalExecutor
from accel_sim.reports.headline import headline_numbers, headline_values
from browser import Browser, find_chromium

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: apt-get install chromium to run the "
                                                         "browser tests of the HTML reports")
DSE_DATA = Path(__file__).parents[1] / "dse" / "data"
SHOTS = os.environ.get("ACCEL_SIM_SCREENSHOTS")  # a folder: each report's screenshot is saved there (docs/reports)
# A float printed raw: exponent notation, or more than 4 digits after a decimal point
RAW_FLOAT = re.compile(r"\b\d+\.\d+[eE][-+]?\d+\b|\b\d+\.\d{5,}\b")
TEXT = ("(function(){var c=document.body.cloneNode(true);c.querySelectorAll('pre,code,script,style,.js-plotly-plot')"
        ".forEach(function(e){e.remove();});return c.innerText;})()")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The report of each kind: a run with a timeline (scheduled), a run without one (sequential, from ARCH WORKLOAD),
    an NPU+PIM run, the sequential run compared with ten times its DRAM bandwidth, and a sweep searched by NSGA-II."""
    root = tmp_path_factory.mktemp("browser")
    out = {}
    for kind, run in (("timeline", ["fusemax_like", "attention_1pass.einsum"]),
                      # batch 32: the projections run on the arrays (at batch 1 they are bus-bound on the arrays and the vector
                      # units alike and go to the cheaper vector units, leaving the arrays no roofline point)
                      ("npu_pim", ["neupims_like", "llama2-7b-decode", "--set", "workload.n_layers=1",
                                   "--set", "workload.batch=32"])):
        assert main(["run", *run, "-o", str(root / kind), "--json"]) == 0
        assert main(["report", str(root / kind)]) == 0
        out[kind] = root / kind
    assert main(["report", "edge_npu", "mlp.einsum", "-o", str(root / "sequential")]) == 0
    out["sequential"] = root / "sequential"
    assert main(["run", "edge_npu", "mlp.einsum", "-o", str(root / "faster_dram"), "--json",
                 "--set", "memory.dram.bandwidth=7.2 GB/s"]) == 0
    assert main(["report", str(root / "sequential"), str(root / "faster_dram"), "-o", str(root / "comparison")]) == 0
    out["comparison"] = root / "comparison"
    out["faster_dram"] = root / "faster_dram"
    spec = root / "search.yaml"
    spec.write_text((DSE_DATA / "small.yaml").read_text().replace(
        "strategy: grid", "strategy: {kind: nsga2, n: 8, seed: 3, batch: 4}"))
    run_sweep(load_sweep(spec), root / "sweep" / "results.db", executor=LocalExecutor(1))
    assert main(["report", str(root / "sweep" / "results.db")]) == 0
    out["sweep"] = root / "sweep"
    return out


@pytest.fixture(scope="module")
def browser():  # noqa: ANN201 - a Browser
    """One headless Chromium for the module."""
    with Browser(CHROMIUM) as b:  # type: ignore[arg-type]
        yield b


def _open(browser: Browser, page: Path, shot: str) -> None:
    """Open `page` with a fresh record of events; check it loaded offline and cleanly."""
    browser.events.clear()
    browser.open(page.resolve().as_uri())
    assert browser.console_errors() == []
    assert browser.requests() == [page.resolve().as_uri()]  # the page itself and nothing else
    assert browser.evaluate("typeof Plotly") == "object"
    if SHOTS:
        browser.screenshot(Path(SHOTS) / f"{shot}.png")


@pytest.mark.parametrize("kind", ["timeline", "sequential", "npu_pim"])
def test_run_report_in_the_browser(reports: dict[str, Path], browser: Browser, kind: str) -> None:
    """The run report renders offline; its headline tiles show summary.json's numbers; the roofline has hover text;
    the timeline is there exactly when the run overlapped engines; no raw float in the text."""
    folder = reports[kind]
    _open(browser, folder / "report.html", f"run_{kind}")
    summary = json.loads((folder / "summary.json").read_text())
    tiles = browser.evaluate("Array.from(document.querySelectorAll('.kpi')).map(function(k){"
                             "return [k.dataset.kpi, k.querySelector('b').textContent];})")
    assert [tuple(t) for t in tiles] == headline_numbers(summary)
    assert browser.evaluate("document.getElementById('design') !== null")
    hover = browser.evaluate("document.getElementById('plot-roofline').data.filter(function(t){"
                             "return t.mode==='markers';}).map(function(t){return t.customdata.length;})")
    assert hover and all(n > 0 for n in hover)
    has_timeline = browser.evaluate("document.getElementById('plot-timeline') !== null")
    assert has_timeline == (kind != "sequential")
    if has_timeline:
        bars = browser.evaluate("document.getElementById('plot-timeline').data.map(function(t){return t.text.length;})")
        assert sum(bars) > 0
    assert browser.evaluate("document.querySelector('.scroll table.sortable th').textContent") == "bound"
    assert browser.evaluate("document.getElementById('provenance').textContent").count("accel-sim") >= 2
    assert RAW_FLOAT.findall(browser.evaluate(TEXT)) == []


def test_npu_pim_timeline_and_roofs(reports: dict[str, Path], browser: Browser) -> None:
    """NPU+PIM: the PIM engine has a roof at its own DRAM, and the eight identical arrays are one legend group."""
    _open(browser, reports["npu_pim"] / "report.html", "run_npu_pim_roofline")
    names = browser.evaluate("document.getElementById('plot-roofline').data.map(function(t){return t.name;})")
    assert any(n.startswith("pim ← hbm") for n in names)
    assert not any(n.startswith("sa3") for n in names) and any(n.startswith("sa0..sa7") for n in names)


def test_sweep_report_in_the_browser(reports: dict[str, Path], browser: Browser) -> None:
    """The sweep report renders offline with its Pareto view and parallel coordinates; changing an axis restyles the
    scatter; clicking the knee opens its design's run report, which renders offline too."""
    page = reports["sweep"] / "report.html"
    _open(browser, page, "sweep")
    plot = "plot-pareto-mlp_einsum"
    assert browser.evaluate(f"document.getElementById('{plot}').data.length") >= 2
    assert browser.evaluate("document.getElementById('plot-parallel-mlp_einsum').data[0].type") == "parcoords"
    volumes = browser.evaluate("document.getElementById('plot-hypervolume-mlp_einsum').data[0].y")
    assert len(volumes) == 2 and volumes == sorted(volumes)  # 8 designs asked 4 per round; the front only grows
    assert RAW_FLOAT.findall(browser.evaluate(TEXT)) == []
    browser.evaluate(f"(function(){{var s=document.getElementById('{plot}-x');s.value='energy_j';"
                     "s.dispatchEvent(new Event('change'));return 1;})()")
    assert browser.evaluate(f"document.getElementById('{plot}').layout.xaxis.title.text") == "energy (J)"
    link = browser.evaluate(f"document.getElementById('{plot}').data.filter(function(t){{return t.name==='knee';}})"
                            "[0].customdata[0][1]")
    assert link.startswith("designs/point_")
    mark = len(browser.events)
    browser.evaluate(f"(function(){{var d=document.getElementById('{plot}');var t=d.data.filter(function(t){{"
                     "return t.name==='knee';})[0];d.emit('plotly_click',{points:[{customdata:t.customdata[0]}]});"
                     "return 1;})()")
    browser.wait_for("Page.loadEventFired", after=mark)
    assert browser.evaluate("window.location.href") == (page.parent / link).resolve().as_uri()
    assert browser.evaluate("document.getElementById('design') !== null")
    assert browser.console_errors() == []


def test_comparison_page_in_the_browser(reports: dict[str, Path], browser: Browser) -> None:
    """The comparison page renders offline; each headline tile's change equals (B - A) / A from the two summary.json
    files and shows B's number; both designs, both provenance footers and the moved-einsum table (bound first) are
    there; energy and traffic are plotted side by side; no raw float in the text."""
    _open(browser, reports["comparison"] / "compare.html", "compare")
    a, b = (json.loads((reports[k] / "summary.json").read_text()) for k in ("sequential", "faster_dram"))
    tiles = browser.evaluate("Array.from(document.querySelectorAll('.kpi')).map(function(k){"
                             "return [k.dataset.kpi, parseFloat(k.dataset.change), k.querySelector('b').textContent];})")
    expected = [(label, (after - before) / before, text)
                for (label, before, _), (_, after, text) in zip(headline_values(a), headline_values(b))]
    assert [t[0] for t in tiles] == [e[0] for e in expected] and [t[2] for t in tiles] == [e[2] for e in expected]
    assert [t[1] for t in tiles] == pytest.approx([e[1] for e in expected], rel=1e-9)
    for ident in ("design-a", "design-b", "provenance-a", "provenance-b"):
        assert browser.evaluate(f"document.getElementById('{ident}') !== null"), ident
    assert browser.evaluate("document.querySelector('.scroll table.sortable th').textContent") == "bound A → B"
    bars = browser.evaluate("document.getElementById('plot-energy').data.map(function(t){return t.x.join(',');})")
    assert bars and all(x == "A,B" for x in bars)
    assert browser.evaluate("document.getElementById('plot-traffic').data.length") == 2  # dram, global_buffer
    assert RAW_FLOAT.findall(browser.evaluate(TEXT)) == []
