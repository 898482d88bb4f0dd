// Click a column heading to sort its table; click again to reverse. Numbers sort as numbers, "-" last.
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute("data-order") !== "desc";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-order"); });
      th.setAttribute("data-order", down ? "desc" : "asc");
      function key(row) {
        var cell = row.cells[col];
        var raw = cell.getAttribute("data-value");
        if (raw === null) raw = cell.textContent.trim();
        var n = parseFloat(raw);
        return isNaN(n) ? raw : n;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === y) return 0;
        if (x === "-" || x === "") return 1;
        if (y === "-" || y === "") return -1;
        if (typeof x === "number" && typeof y === "number") return down ? y - x : x - y;
        return down ? String(y).localeCompare(String(x)) : String(x).localeCompare(String(y));
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
