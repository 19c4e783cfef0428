"""One report page, written as a self-contained HTML file and a Markdown summary beside it.

plotly.js comes inlined from the plotly package, once per page; the page's own script (sortable, filterable tables)
is inline too: an HTML report opens offline and requests nothing from the network.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

TABLE_ROWS = 500   # rows a table shows before it says how many more there are (the CSV has them all)
STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1280px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
.card{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:.8em;background:#f7f8fa;
border:1px solid #e2e4e8;border-radius:8px;padding:.8em 1em}.card h3{margin:.1em 0 .3em;font-size:.95em;color:#555}
.card ul{margin:0;padding-left:1.1em;font-size:13px}.kpis{display:flex;flex-wrap:wrap;gap:.6em;margin:1em 0}
.kpi{flex:1 1 150px;border:1px solid #e2e4e8;border-radius:8px;padding:.5em .8em}.kpi b{display:block;font-size:1.35em}
.kpi span{color:#666;font-size:12px}.sentence{font-size:1.05em;background:#fff8e6;border-left:4px solid #f0b429;
padding:.5em .8em}.warn{background:#fdecea;border-left:4px solid #d93025;padding:.5em .8em}
.note{color:#666;font-size:13px}.scroll{max-height:480px;overflow:auto;border:1px solid #ddd}
table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #eee;padding:2px 8px;text-align:right;
white-space:nowrap}th{background:#f3f3f3;position:sticky;top:0;cursor:pointer;user-select:none}
td.t,th.t{text-align:left}input.filter{margin:.3em 0;padding:3px 6px;width:22em}
footer{margin-top:2em;border-top:1px solid #ddd;font-size:12px;color:#555}footer code{font-size:11px}
pre{background:#f7f7f7;padding:.6em;font-size:12px;overflow:auto}.plot{width:100%}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:.8em}.pair h3{margin:.2em 0}.kpi i{display:block;
font-style:normal;font-size:12px}.better{color:#1a7f37}.worse{color:#c62828}
"""
# Click a header to sort (numbers by the value in data-v), type in the box above a table to filter its rows.
SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
    var body=t.tBodies[0],rows=Array.from(body.rows),dir=th.dataset.dir==='asc'?-1:1;th.dataset.dir=dir>0?'asc':'desc';
    rows.sort(function(a,b){var x=a.cells[i].dataset.v,y=b.cells[i].dataset.v;
      if(x!==undefined&&y!==undefined)return dir*(parseFloat(x)-parseFloat(y));
      return dir*a.cells[i].textContent.localeCompare(b.cells[i].textContent);});
    rows.forEach(function(r){body.appendChild(r);});});});});
document.querySelectorAll('input.filter').forEach(function(box){box.addEventListener('input',function(){
  var q=box.value.toLowerCase(),t=document.getElementById(box.dataset.table);
  Array.from(t.tBodies[0].rows).forEach(function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';});});});
"""
PLOT_CONFIG = {"displaylogo": False, "responsive": True,
               "toImageButtonOptions": {"format": "svg", "scale": 1}}   # the camera button saves a vector figure


def plotly_js() -> str:
    """The plotly.js bundled with the plotly package (minified), to inline in a page."""
    from plotly.offline import get_plotlyjs  # plotly is heavy to import: loaded on first use (writing a page)

    return get_plotlyjs()


class Cell:
    """A table cell: the text shown and, for numbers, the value it sorts by."""

    __slots__ = ("text", "value", "title")

    def __init__(self, text: str, value: float | None = None, title: str | None = None) -> None:
        """`text` shown; `value` (numbers) sorts the column; `title` shows on hover."""
        self.text, self.value, self.title = text, value, title


class Page:
    """Sections of one report, rendered both as HTML and as Markdown."""

    def __init__(self, title: str) -> None:
        """An empty page titled `title`."""
        self.title = title
        self.html: list[str] = [f"<h1>{html.escape(title)}</h1>"]
        self.md: list[str] = [f"# {title}", ""]
        self._ids = 0
        self._plots = 0

    def _id(self, stem: str) -> str:
        self._ids += 1
        return f"{stem}{self._ids}"

    def heading(self, text: str, anchor: str | None = None) -> None:
        """A section heading."""
        ident = f" id='{html.escape(anchor)}'" if anchor else ""
        self.html.append(f"<h2{ident}>{html.escape(text)}</h2>")
        self.md += [f"## {text}", ""]

    def text(self, text: str, css: str = "note") -> None:
        """A paragraph (css 'note', 'sentence' or 'warn')."""
        self.html.append(f"<p class='{css}'>{html.escape(text)}</p>")
        self.md += [text, ""]

    def raw(self, markup: str, markdown: Sequence[str] = ()) -> None:
        """Markup built by the caller (escaped there), with its Markdown lines."""
        self.html.append(markup)
        self.md += [*markdown, ""] if markdown else []

    def kpis(self, numbers: Sequence[tuple[str, str]]) -> None:
        """A row of headline numbers: label under a large value."""
        tiles = "".join(f"<div class='kpi' data-kpi='{html.escape(k)}'><b>{html.escape(v)}</b>"
                        f"<span>{html.escape(k)}</span></div>" for k, v in numbers)
        self.html.append(f"<div class='kpis'>{tiles}</div>")
        self.md += [" · ".join(f"**{v}** {k}" for k, v in numbers), ""]

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Cell | str]], *, scroll: bool = True,
              text_columns: int = 1, limit: int = TABLE_ROWS, filterable: bool = True) -> None:
        """A sortable table (click a header), filterable by a text box, scrolling inside its own box."""
        ident = self._id("table")
        shown = rows[:limit]
        head = "".join(f"<th class='{'t' if i < text_columns else ''}'>{html.escape(c)}</th>"
                       for i, c in enumerate(columns))
        body = "".join("<tr>" + "".join(_cell(c, i < text_columns) for i, c in enumerate(row)) + "</tr>"
                       for row in shown)
        box = (f"<input class='filter' data-table='{ident}' placeholder='filter rows…' aria-label='filter rows'>"
               if filterable and len(shown) > 8 else "")
        table = f"<table class='sortable' id='{ident}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        self.html.append(box + (f"<div class='scroll'>{table}</div>" if scroll else table))
        self.md += [_md_table(columns, shown), ""]
        if len(rows) > limit:
            self.text(f"{len(rows) - limit} more rows not shown (the CSV beside this page has them all).")

    def plot(self, figure: Mapping[str, Any], caption: str, name: str) -> None:
        """An interactive plotly figure (hover, zoom; the camera button saves SVG); `name` ids the div."""
        self._plots += 1
        ident = f"plot-{name}"
        spec = json.dumps({"data": figure["data"], "layout": figure["layout"], "config": PLOT_CONFIG},
                          separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
        self.html.append(f"<figure><div class='plot' id='{ident}'></div><script>(function(){{var f={spec};"
                         f"Plotly.newPlot('{ident}',f.data,f.layout,f.config);}})();</script>"
                         f"<figcaption class='note'>{html.escape(caption)}</figcaption></figure>")
        self.md += [f"_{caption}: interactive in report.html_", ""]

    def pre(self, text: str) -> None:
        """Preformatted text (a YAML spec)."""
        self.html.append(f"<pre>{html.escape(text)}</pre>")
        self.md += ["```yaml", text.rstrip(), "```", ""]

    def write(self, out_dir: Path, stem: str = "report") -> tuple[Path, Path]:
        """Write `stem`.html and `stem`.md into `out_dir`; plotly.js is inlined when the page has a plot."""
        out_dir.mkdir(parents=True, exist_ok=True)
        script = f"<script>{plotly_js()}</script>" if self._plots else ""
        page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
                f"<title>{html.escape(self.title)}</title><style>{STYLE}</style>{script}</head>"
                f"<body>{''.join(self.html)}<script>{SCRIPT}</script></body></html>\n")
        html_path, md_path = out_dir / f"{stem}.html", out_dir / f"{stem}.md"
        html_path.write_text(page, encoding="utf-8")
        md_path.write_text("\n".join(self.md).rstrip() + "\n", encoding="utf-8")
        return html_path, md_path


def _cell(cell: Cell | str, text: bool) -> str:
    if not isinstance(cell, Cell):
        cell = Cell(str(cell))
    value = f" data-v='{cell.value!r}'" if cell.value is not None else ""
    title = f" title='{html.escape(cell.title)}'" if cell.title else ""
    return f"<td class='{'t' if text else ''}'{value}{title}>{html.escape(cell.text)}</td>"


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[Cell | str]]) -> str:
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "---|" * len(columns)
    body = ["| " + " | ".join((c.text if isinstance(c, Cell) else str(c)).replace("|", "\\|") for c in row) + " |"
            for row in rows]
    return "\n".join([head, rule, *body])
