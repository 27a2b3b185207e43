// The review pages' behaviour, served from judge/api/static (never inline: the pages' Content
// Security Policy allows no inline script). Keyboard shortcuts, the task's "show all", the diff
// view switch, the note from the compact bar. Every control also works without this file
// (plain forms and links; the compact bar's buttons belong to the label form by their form
// attribute).
(function () {
  "use strict";

  function typing(target) {
    return target && target.matches && target.matches("input, textarea, select");
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (typing(e.target)) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    // Queue page: Enter opens the first item.
    var start = document.getElementById("start");
    if (start && e.key === "Enter" && !e.target.matches("button, a")) {
      e.preventDefault();
      start.click();
      return;
    }
    var key = e.key.toLowerCase();
    if (key === "n") {
      var note = document.getElementById("note");
      if (note) { e.preventDefault(); note.focus(); }
      return;
    }
    var button = document.querySelector('#label-form button[data-key="' + key + '"]');
    if (button) { e.preventDefault(); button.click(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    // The task is clamped to a few lines so that the evidence is on screen; show all of it.
    var task = document.getElementById("task-box");
    var more = document.getElementById("task-more");
    if (task && more) {
      if (task.scrollHeight <= task.clientHeight + 2) {
        more.hidden = true;
        task.classList.add("open");
      }
      more.addEventListener("click", function () {
        var open = task.classList.toggle("open");
        more.textContent = open ? "Show less" : "Show all";
      });
    }
    // The compact bar's "Note" link: to the decision card, with the cursor in the note.
    var noteLink = document.querySelector('#quickbar a[href="#decision"]');
    var noteBox = document.getElementById("note");
    if (noteLink && noteBox) {
      noteLink.addEventListener("click", function () {
        window.setTimeout(function () { noteBox.focus(); }, 0);
      });
    }
    // Diff: coloured unified view or side by side.
    var toggle = document.getElementById("diff-toggle");
    var diff = document.getElementById("diff-card");
    if (toggle && diff) {
      toggle.hidden = false;
      toggle.addEventListener("click", function () {
        var split = diff.classList.toggle("show-split");
        toggle.textContent = split ? "Unified" : "Side by side";
      });
    }
  });
})();
