// The replay viewer's play, pause and slider: an enhancement over the step links,
// which work without JavaScript. Frames come from the server (htmx swaps the panel).
(function () {
  "use strict";
  function ready() {
    var viewer = document.getElementById("viewer");
    var slider = document.getElementById("turn");
    var play = document.getElementById("play");
    if (!viewer || !slider || !play || !window.htmx) { return; }
    var last = parseInt(viewer.dataset.turns, 10);
    var timer = null;
    function current() {
      var frame = document.getElementById("frame");
      return frame ? parseInt(frame.dataset.turn, 10) : 0;
    }
    function show(turn) {
      return window.htmx.ajax("GET", "?turn=" + turn, {
        target: "#frame-panel", select: "#frame-panel", swap: "outerHTML"
      });
    }
    function stop() {
      if (timer !== null) { clearInterval(timer); timer = null; }
      play.textContent = "Play";
      play.setAttribute("aria-pressed", "false");
    }
    play.hidden = false;
    play.setAttribute("aria-pressed", "false");
    play.addEventListener("click", function () {
      if (timer !== null) { stop(); return; }
      play.textContent = "Pause";
      play.setAttribute("aria-pressed", "true");
      timer = setInterval(function () {
        var turn = current();
        if (turn >= last) { stop(); return; }
        show(turn + 1);
      }, 250);
    });
    slider.addEventListener("change", function () { stop(); show(slider.value); });
    document.body.addEventListener("htmx:afterSwap", function () {
      slider.value = String(current());
      history.replaceState(null, "", "?turn=" + current());
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else { ready(); }
})();
