// The page's two scripts; every page works without them.
//
// Times: the server writes each time in UTC (<time datetime=…>); this
// rewrites them in the browser's time zone and keeps UTC on hover (the
// title). Chart hours (<text data-hour=…>) likewise. The forms' hidden
// tz fields (<input data-tz>) get the browser's offset from UTC in
// minutes east, so a time typed in a form is read as the browser's; a
// page without this script says its forms' times are UTC.
//
// Refresh: the overview reloads in place every 10 seconds (without it, a
// plain link reloads it).
(function () {
  "use strict";
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function zone(d) {
    try {
      var parts = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d);
      for (var i = 0; i < parts.length; i++) { if (parts[i].type === "timeZoneName") { return parts[i].value; } }
    } catch (e) { /* an old browser: no zone name */ }
    return "";
  }
  function localize(root) {
    var els = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i], d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) { continue; }
      var hm = pad(d.getHours()) + ":" + pad(d.getMinutes()), z = zone(d);
      if (el.hasAttribute("data-clock")) {
        el.textContent = hm + (z ? " " + z : "");
      } else {
        el.textContent = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + hm + ":" + pad(d.getSeconds()) + (z ? " " + z : "");
      }
    }
    var hours = root.querySelectorAll("text[data-hour]");
    for (var j = 0; j < hours.length; j++) {
      var h = new Date(hours[j].getAttribute("data-hour"));
      if (!isNaN(h.getTime())) { hours[j].textContent = pad(h.getHours()) + ":" + pad(h.getMinutes()); }
    }
    var notes = root.querySelectorAll("[data-zone]");
    for (var k = 0; k < notes.length; k++) { notes[k].textContent = "your time, " + (zone(new Date()) || "local"); }
    var tz = root.querySelectorAll("input[data-tz]");
    for (var m = 0; m < tz.length; m++) { tz[m].value = String(-new Date().getTimezoneOffset()); }
  }
  localize(document);

  var box = document.getElementById("overview");
  if (!box || !window.fetch || !window.DOMParser) { return; }
  setInterval(function () {
    if (document.hidden) { return; }
    fetch(box.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("overview");
        if (next) { localize(next); box.replaceChildren.apply(box, Array.prototype.slice.call(next.childNodes)); }
      })
      .catch(function () {});
  }, 10000);
})();
