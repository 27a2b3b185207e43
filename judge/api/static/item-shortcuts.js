// Keyboard shortcuts of the review item page (label buttons by data-key, N for the note).
// A static file: the page's Content-Security-Policy allows no inline script.
document.addEventListener("keydown", function (e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.target.matches("input, textarea")) {
    if (e.key === "Escape") e.target.blur();
    return;
  }
  var key = e.key.toLowerCase();
  if (key === "n") { var note = document.getElementById("note"); if (note) { e.preventDefault(); note.focus(); } return; }
  var button = document.querySelector('button[data-key="' + key + '"]');
  if (button) { e.preventDefault(); button.click(); }
});
