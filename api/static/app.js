// pgrecall's page: keyboard navigation between hits. The page works without this file.
(function () {
  "use strict";
  function links() { return Array.prototype.slice.call(document.querySelectorAll("#results .hit-link")); }
  document.addEventListener("keydown", function (event) {
    var box = document.getElementById("q");
    if (event.key === "/" && box && document.activeElement !== box && !/INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName)) {
      event.preventDefault();
      box.focus();
      return;
    }
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") { return; }
    var all = links();
    if (!all.length) { return; }
    var at = all.indexOf(document.activeElement);
    if (at === -1 && document.activeElement !== box) { return; }
    event.preventDefault();
    var next = event.key === "ArrowDown" ? at + 1 : at - 1;
    if (next < 0) { if (box) { box.focus(); } return; }
    all[Math.min(next, all.length - 1)].focus();
  });
  document.addEventListener("DOMContentLoaded", function () {
    var hit = document.querySelector(".hit-chunk");
    if (hit) { hit.scrollIntoView({block: "center"}); }
  });
})();
