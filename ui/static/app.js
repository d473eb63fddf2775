// Refreshes the overview in place every 10 seconds. The page works without
// it: a plain link reloads it.
(function () {
  "use strict";
  var box = document.getElementById("overview");
  if (!box || !window.fetch || !window.DOMParser) { return; }
  setInterval(function () {
    if (document.hidden) { return; }
    fetch(box.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("overview");
        if (next) { box.replaceChildren.apply(box, Array.prototype.slice.call(next.childNodes)); }
      })
      .catch(function () {});
  }, 10000);
})();
