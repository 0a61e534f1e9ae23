// herald console: live refresh of the parts of a page marked data-live,
// backlog sparklines drawn from the samples seen since the page opened,
// and "tick all" checkboxes. No framework; the pages work without it.
(function () {
  "use strict";
  var history = {}; // series name -> recent values

  function drawSparks(root) {
    root.querySelectorAll("[data-series]").forEach(function (row) {
      var key = row.getAttribute("data-series");
      var v = Number(row.getAttribute("data-value")) || 0;
      var h = history[key] || (history[key] = []);
      h.push(v);
      if (h.length > 120) h.shift();
      var line = row.querySelector("svg.spark polyline");
      if (!line) return;
      var top = Math.max(1, Math.max.apply(null, h));
      var step = 120 / Math.max(h.length - 1, 1);
      line.setAttribute("points", h.map(function (x, i) {
        return (i * step).toFixed(1) + "," + (23 - 22 * x / top).toFixed(1);
      }).join(" "));
    });
  }

  function refresh() {
    fetch(location.href, { credentials: "same-origin", headers: { "X-Console-Live": "1" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh) el.replaceWith(document.importNode(fresh, true));
        });
        drawSparks(document);
      })
      .catch(function () { /* the next round tries again */ });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawSparks(document);
    var every = Number(document.body.getAttribute("data-live-every"));
    if (every > 0) setInterval(refresh, every * 1000);
    document.querySelectorAll("input[data-all]").forEach(function (box) {
      box.addEventListener("change", function () {
        var name = box.getAttribute("data-all");
        box.form.querySelectorAll("input[name='" + name + "']").forEach(function (b) { b.checked = box.checked; });
      });
    });
  });
})();
