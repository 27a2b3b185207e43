// The review pages' behaviour, served from judge/api/static (never inline: the pages' Content
// Security Policy allows no inline script). Keyboard shortcuts, the task's "show all", the diff
// view switch, the note from the compact bar, and on a first-bad-decision item the step picked
// on the timeline (J/K move it, O opens it; the button says whether it confirms the judge's
// step or moves it). Every control also works without this file (plain forms and links; the
// compact bar's buttons and the timeline's radio buttons belong to the label form by their form
// attribute).
(function () {
  "use strict";

  function stepRadios() {
    return Array.prototype.slice.call(document.querySelectorAll('#timeline input[name="step"]'));
  }

  // Mark the picked step and say on the button what labelling it does.
  function showPicked() {
    var timeline = document.getElementById("timeline");
    var text = document.getElementById("located-text");
    if (!timeline) return;
    var proposed = timeline.getAttribute("data-proposed");
    stepRadios().forEach(function (radio) {
      var step = radio.closest("li.step");
      if (step) step.classList.toggle("picked", radio.checked);
      if (radio.checked && text) {
        text.textContent = (radio.value === proposed ? "Confirm step " : "Move to step ") +
          radio.value;
      }
    });
  }

  // J/K: pick the next/previous step (the first one when none is picked).
  function movePick(by) {
    var radios = stepRadios();
    if (!radios.length) return false;
    var at = radios.findIndex(function (r) { return r.checked; });
    var next = at < 0 ? 0 : Math.min(radios.length - 1, Math.max(0, at + by));
    radios[next].checked = true;
    showPicked();
    radios[next].closest("li.step").scrollIntoView({ block: "nearest" });
    return true;
  }

  // O: open or close the full text of the picked step.
  function togglePicked() {
    var picked = document.querySelector("#timeline li.picked details.step-text");
    if (!picked) return false;
    picked.open = !picked.open;
    return true;
  }

  function typing(target) {
    // A picked step's radio button has the focus after a click: shortcuts still work there.
    return target && target.matches &&
      target.matches('textarea, select, input:not([type="radio"]):not([type="checkbox"])');
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
    if ((key === "j" || key === "k") && movePick(key === "j" ? 1 : -1)) {
      e.preventDefault();
      return;
    }
    if (key === "o" && togglePicked()) {
      e.preventDefault();
      return;
    }
    if (key === "n") {
      var note = document.getElementById("note");
      if (note) { e.preventDefault(); note.focus(); }
      return;
    }
    var button = document.querySelector('#label-form button[data-key="' + key + '"]');
    if (button) { e.preventDefault(); button.click(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    // The timeline: picking a step (a click on it, or J/K) updates the label button.
    stepRadios().forEach(function (radio) {
      radio.addEventListener("change", showPicked);
    });
    showPicked();
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
