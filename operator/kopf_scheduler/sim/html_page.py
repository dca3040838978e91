"""The frame of the simulator's HTML reports: one self-contained page, nothing fetched.

A report is read in a browser long after it was made, often from a CI artifact or a mail, so
the page carries its style and its script inline, and its Content-Security-Policy forbids every
request (no image, font, script or style from anywhere but the page itself). Names of nodes,
pods and plugins come from the cluster, that is from users: every text goes through
:func:`text`, which escapes it, and the pieces of markup built here only ever join escaped text.

The script makes every ``table.sortable`` sortable by a click on a column head (by the cells'
``data-sort`` when they have one, as numbers where both are numbers) and filters the rows of the
table an ``input.filter`` names by its ``data-table``, on the rows' ``data-filter`` text; both
act on the table's body only, so a total in its footer stays where it is.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

Markup = str
"""HTML built from escaped text (never raw user input)."""

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1f24; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; } h3, h4 { font-size: 1em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #d0d7de; padding: .25em .5em; vertical-align: top; text-align: left; }
th { background: #f6f8fa; cursor: pointer; user-select: none; white-space: nowrap; }
tfoot td { font-weight: 600; border-top: 2px solid #8c959f; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
tbody td:first-child, td.name { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.filtered { background: #ffebe9; }
td.scored { background: #dafbe1; }
td.stop { background: #fff8c5; }
.reasons { font-size: .85em; color: #57606a; margin: 0; padding-left: 1em; }
.bar { position: relative; width: 9em; height: .7em; background: #eaeef2; margin-top: .2em; }
.bar span { position: absolute; left: 0; top: 0; bottom: 0; }
.bar .after { background: #0969da; } .bar .before { background: #8c959f; }
.muted { color: #57606a; }
input.filter { margin: .3em 0; padding: .2em .4em; width: 20em; }
"""

_SCRIPT = """
(function () {
  function key(cell) {
    return cell.hasAttribute('data-sort') ? cell.getAttribute('data-sort') : cell.textContent;
  }
  function compare(a, b) {
    var x = parseFloat(a), y = parseFloat(b);
    if (!isNaN(x) && !isNaN(y) && String(x) === a.trim() && String(y) === b.trim()) {
      return x - y;
    }
    return a.localeCompare(b);
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('thead th').forEach(function (head, column) {
      head.addEventListener('click', function () {
        var ascending = head.getAttribute('aria-sort') !== 'ascending';
        table.querySelectorAll('thead th').forEach(function (other) {
          other.removeAttribute('aria-sort');
        });
        head.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r, s) {
          var order = compare(key(r.cells[column]), key(s.cells[column]));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  document.querySelectorAll('input.filter').forEach(function (input) {
    var table = document.getElementById(input.getAttribute('data-table'));
    var shown = document.getElementById(input.getAttribute('data-table') + '-shown');
    input.addEventListener('input', function () {
      var wanted = input.value.toLowerCase(), count = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var visible = row.getAttribute('data-filter').toLowerCase().indexOf(wanted) !== -1;
        row.hidden = !visible;
        if (visible) { count += 1; }
      });
      if (shown) { shown.textContent = String(count); }
    });
  });
})();
"""

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def text(value: object) -> Markup:
    """``value`` as HTML text: every ``<``, ``>``, ``&`` and quote escaped."""
    return html.escape(str(value), quote=True)


def element(tag: str, content: Markup = "", **attributes: object) -> Markup:
    """``<tag …>content</tag>``; attribute values are escaped, ``class_`` stands for ``class``,
    and underscores in other names become dashes (``data_sort`` is ``data-sort``)."""
    rendered = "".join(
        f' {"class" if name == "class_" else name.replace("_", "-")}="{text(value)}"'
        for name, value in attributes.items()
        if value is not None
    )
    return f"<{tag}{rendered}>{content}</{tag}>"


def sortable_table(
    table_id: str,
    heads: Iterable[Markup],
    rows: Sequence[Markup],
    *,
    filter_label: str = "",
    footer: Markup = "",
) -> Markup:
    """A table the page's script sorts by any column; with ``filter_label``, a filter box above
    it (rows need a ``data-filter`` text) and the number of rows it leaves shown. The ``footer``
    rows (a total) stay below the others, sorted or filtered."""
    body = "".join(rows)
    table = element(
        "table",
        element("thead", element("tr", "".join(element("th", head) for head in heads)))
        + element("tbody", body)
        + (element("tfoot", footer) if footer else ""),
        id=table_id,
        class_="sortable",
    )
    if not filter_label:
        return table
    total = len(rows)
    box = element(
        "label",
        text(filter_label)
        + " "
        + f'<input class="filter" type="search" data-table="{text(table_id)}">'
        + " "
        + element("span", text(total), id=f"{table_id}-shown")
        + text(f" of {total} shown"),
    )
    return element("p", box) + table


def page(title: str, body: Markup) -> str:
    """The whole document: ``title`` (escaped here) over ``body``."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{text(_POLICY)}">'
        f"<title>{text(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{element('h1', text(title))}{body}<script>{_SCRIPT}</script></body></html>\n"
    )
